"""Smoke-test transports for a container reached directly (the local stack, tests): a plain WebSocket session
that sends binary frames, and ``POST /invocations`` over HTTP."""

from __future__ import annotations

import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from typing import Final

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from relay_core.close_codes import NORMAL_CLOSURE
from relay_functions.ops.smoke_transport import InvocationStream, SessionClosedError, SessionConnection

MAX_FRAME_BYTES: Final = 16 * 1024 * 1024
READ_BYTES: Final = 8192
HTTP_TIMEOUT_S: Final = 60.0


class WsSession:
    """A TTS session on a plain WebSocket; every client frame goes out binary."""

    def __init__(self, websocket: ClientConnection) -> None:
        self._ws = websocket

    async def send_binary(self, frame: bytes) -> None:
        try:
            await self._ws.send(frame)
        except ConnectionClosed as exc:
            raise SessionClosedError(f"closed before sending ({exc})", clean=False) from exc

    async def receive(self) -> str | bytes:
        try:
            return await self._ws.recv()
        except ConnectionClosed as exc:
            code = exc.rcvd.code if exc.rcvd is not None else None
            raise SessionClosedError(f"WebSocket closed with code {code}", clean=code == NORMAL_CLOSURE) from exc

    async def aclose(self) -> None:
        await self._ws.close()


def ws_session(url: str) -> Callable[[], Awaitable[SessionConnection]]:
    """Opens sessions at ``url`` (``ws://host:port/invocations-bidirectional-stream``)."""

    async def open_session() -> SessionConnection:
        return WsSession(await connect(url, max_size=MAX_FRAME_BYTES, compression=None, open_timeout=10))

    return open_session


def http_invocations(base_url: str) -> InvocationStream:
    """``POST {base_url}/invocations`` (``http://host:port``), body streamed back in chunks."""

    def post(body: bytes) -> Iterator[bytes]:
        request = urllib.request.Request(  # noqa: S310 - the operator's own container URL
            f"{base_url}/invocations", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as response:  # noqa: S310
            while chunk := response.read1(READ_BYTES):
                yield chunk

    return post


__all__ = ["WsSession", "http_invocations", "ws_session"]
