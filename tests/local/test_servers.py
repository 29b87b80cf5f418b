"""relay_local.servers.BackgroundServer: a server whose open request never finishes still stops (forced, after the
graceful wait), and says so; one with nothing open stops quietly."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import httpx
import pytest

from relay_local.servers import BackgroundServer

HANG_S = 30.0
"""Only catches a hang."""


def _app(entered: threading.Event) -> Any:
    """An ASGI app whose every request waits for ever (after setting ``entered``)."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                kind = (await receive())["type"]  # lifespan.startup, then lifespan.shutdown
                await send({"type": f"{kind}.complete"})
                if kind == "lifespan.shutdown":
                    return
        entered.set()
        await asyncio.Event().wait()

    return app


def test_a_server_with_a_request_that_never_ends_is_forced_to_stop_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    entered = threading.Event()
    server = BackgroundServer(_app(entered), name="hanging").start()

    def hang() -> None:
        try:
            httpx.get(server.http_url, timeout=HANG_S)
        except httpx.HTTPError:
            pass  # the forced stop drops the connection: what this client sees is not under test

    threading.Thread(target=hang, daemon=True).start()
    assert entered.wait(HANG_S), "the request reached the app"
    with caplog.at_level(logging.WARNING, logger="relay_local.servers"):
        server.stop(timeout_s=1.0)
        server._thread.join(HANG_S)
    assert not server._thread.is_alive(), "the forced stop ended the server's thread"
    assert "the hanging server did not stop within 1 s: forcing its exit" in caplog.text


def test_a_server_with_nothing_open_stops_without_a_word(caplog: pytest.LogCaptureFixture) -> None:
    server = BackgroundServer(_app(threading.Event()), name="idle").start()
    with caplog.at_level(logging.WARNING, logger="relay_local.servers"):
        server.stop(timeout_s=HANG_S)
    assert not server._thread.is_alive()
    assert caplog.text == ""
