"""@kokoro-relay/client's Node tests against the real local stack (tests/web/live/client.live.test.mjs).

This test owns the stack (the session ``relay_stack``: the real gateway functions, moto, the agent with the speak
model, the Kokoro TTS; RESUME_WINDOW_S is short) and a small token endpoint (``GET /token?user=&ttl=`` ->
``{"token"}``, minted by ``RelayStack.dev_token``, as an app's auth backend would; beside it ``GET /model-request``
-> ``{"messages": [[role, text], ...]}``, the latest request the agent sent the stack's Bedrock runtime), runs
``node --experimental-websocket --test`` on the live file with their URLs in the environment, and stops the token
endpoint afterwards. Node's own output is shown when it fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlparse

import pytest

if TYPE_CHECKING:
    from relay_local.relay_stack import RelayStack

REPO = Path(__file__).resolve().parents[2]
LIVE_TESTS = REPO / "tests" / "web" / "live" / "client.live.test.mjs"
NODE = shutil.which("node")
LIVE_TIMEOUT_S = 600


def node_major() -> int:
    if NODE is None:
        return 0
    version = subprocess.run([NODE, "--version"], capture_output=True, text=True, check=False, timeout=30).stdout
    match = re.match(r"v(\d+)\.", version)
    return int(match.group(1)) if match else 0


pytestmark = [
    pytest.mark.skipif(NODE is None, reason="node is not installed: make web-test installs it"),
    pytest.mark.skipif(
        NODE is not None and node_major() < 20, reason="@kokoro-relay/client supports Node >= 20: install a newer Node"
    ),
    pytest.mark.timeout(LIVE_TIMEOUT_S + 60),
]


@pytest.fixture
def token_url(relay_stack: RelayStack) -> Iterator[str]:
    """An HTTP endpoint on a free loopback port that mints the stack's dev tokens; stopped after the test."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urlparse(self.path)
            if url.path == "/model-request":
                request = relay_stack.bedrock.last_request
                messages = [] if request is None else [[m.role, m.text] for m in request.messages]
                body = json.dumps({"messages": messages}).encode()
            else:
                query = parse_qs(url.query)
                user = query.get("user", ["node-user"])[0]
                ttl = int(query.get("ttl", ["3600"])[0])
                body = json.dumps({"token": relay_stack.dev_token(user, ttl_s=ttl)}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/token"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_client_library_in_node_against_the_local_stack(relay_stack: RelayStack, token_url: str) -> None:
    env = {
        **os.environ,
        "RELAY_GATEWAY_URL": relay_stack.gateway_url,
        "RELAY_AGENT_URL": relay_stack.agent_url,
        "RELAY_TOKEN_URL": token_url,
        "RELAY_RESUME_WINDOW_S": relay_stack.env["RESUME_WINDOW_S"],
    }
    command = [str(NODE), "--experimental-websocket", "--test", "--test-reporter=tap", str(LIVE_TESTS)]
    done = subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=LIVE_TIMEOUT_S, check=False
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    counts = {k: int(v) for k, v in re.findall(r"^# (pass|fail|skipped) (\d+)$", output, re.MULTILINE)}
    assert counts == {"pass": 9, "fail": 0, "skipped": 0}, output
