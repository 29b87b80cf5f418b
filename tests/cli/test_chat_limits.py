"""``relay chat`` never hangs on a message too large: a prompt whose ``sendMessage`` is over one 32 KB gateway frame
is refused before connecting (one line, exit status 2), and a turn whose ``sendMessage`` the gateway closes the
connection over (1009) ends at once with one line saying why (exit status 1), never sent again.

The 1009 comes from the real local API Gateway (relay_local.gateway.websocket_api) configured with a frame quota
smaller than the 32 KB the client holds to (a gateway stricter than AWS's), with small route handlers written here.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from relay_cli.cli import main
from relay_core import limits
from relay_local.gateway.websocket_api import GatewayConfig, RouteHandlers, WebSocketApi
from relay_local.relay_stack import _bound_socket
from relay_local.servers import LoopThread

STRICT_FRAME_BYTES = 4096
"""The stricter gateway's frame quota: a 5,000-character prompt is within the client's limits, over this."""


@dataclass
class Routes:
    """The route keys the gateway invoked, in order (thread-safe: handlers run in the gateway's worker threads)."""

    keys: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def handler(self, key: str) -> Any:
        def handle(event: dict[str, Any], _: Any) -> dict[str, Any]:
            with self.lock:
                self.keys.append(key)
            return {"statusCode": 200}

        return handle


@pytest.fixture
def strict_gateway() -> Iterator[tuple[str, Routes]]:
    """(ws URL, routes invoked) of a local API Gateway whose frames hold at most STRICT_FRAME_BYTES."""
    routes = Routes()
    handlers = RouteHandlers(routes={key: routes.handler(key) for key in ("$connect", "$disconnect", "$default")})
    api = WebSocketApi(handlers, GatewayConfig(frame_bytes=STRICT_FRAME_BYTES))
    sock = _bound_socket(0)
    loop = LoopThread("strict-gateway").start()
    try:
        loop.run(api.start(sock))
        yield f"ws://127.0.0.1:{sock.getsockname()[1]}/local", routes
        loop.run(api.stop())
    finally:
        loop.stop()


def _chat(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """``relay chat ARGS`` through the CLI's entry point: (exit status, stderr)."""
    capsys.readouterr()
    code = main(["chat", *args])
    return code, capsys.readouterr().err


def test_a_prompt_over_one_gateway_frame_is_refused_before_connecting(capsys: pytest.CaptureFixture[str]) -> None:
    wide = "語" * (limits.APIGW_FRAME_BYTES // 3)  # under MAX_PROMPT_CHARS, over 32 KB of UTF-8
    assert len(wide) <= limits.MAX_PROMPT_CHARS
    code, err = _chat(capsys, "--gateway-url", "ws://127.0.0.1:9/local", "--token", "t", "Hi", wide)
    assert code == 2
    assert err.count("\n") == 1, err
    assert err.startswith("relay chat: prompt 2 cannot be sent: this sendMessage is ")
    assert f"holds {limits.APIGW_FRAME_BYTES}: shorten the prompt" in err
    # nothing listens on port 9: a client that tried to connect would have said it cannot reach the gateway


@pytest.mark.timeout(120)  # catches a hang only
def test_a_turn_the_gateway_closes_with_1009_ends_with_one_line_and_is_not_sent_again(
    capsys: pytest.CaptureFixture[str], strict_gateway: tuple[str, Routes]
) -> None:
    url, routes = strict_gateway
    code, err = _chat(capsys, "--gateway-url", url, "--token", "t", "--quiet", "x" * 5000)
    assert code == 1
    assert err.count("\n") == 1, err
    assert err.startswith("relay chat: the turn ended rejected: limit_exceeded the gateway closed the connection (1009")
    assert "shorten the prompt" in err
    assert [key for key in routes.keys if key != "$disconnect"] == ["$connect"], "one connection, no resend"
