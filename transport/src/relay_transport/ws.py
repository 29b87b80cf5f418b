"""The ``ws`` transport: a TTS session over a plain WebSocket (the container on localhost, or any host running it).

Frames go out as text (the container accepts text and binary alike); control messages come back as text and
PCM as binary frames. A close with code 1000 ends the stream cleanly; 1013 (try again later: the container's
admission is full) is a drop marked ``busy``; anything else is a drop.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, ConnectionClosedOK, InvalidHandshake, InvalidURI

from relay_core.agent.defaults import TTS_CLOSE_TIMEOUT_S, TTS_CONNECT_TIMEOUT_S
from relay_core.close_codes import TRY_AGAIN_LATER
from relay_transport.errors import TtsConnectionClosed, TtsUnavailableError

logger = logging.getLogger(__name__)

MAX_FRAME_BYTES = 4 * 1024 * 1024
"""Largest server frame accepted; the container sends one synthesized segment (seconds of PCM) per frame."""


class WsConnection:
    """One TTS session on an open WebSocket."""

    def __init__(self, websocket: ClientConnection, url: str) -> None:
        self._ws = websocket
        self._url = url

    async def send(self, frame: str) -> None:
        try:
            await self._ws.send(frame)
        except ConnectionClosed as exc:
            raise TtsConnectionClosed(
                f"the TTS session at {self._url} is closed (code {_code(exc)}); open a new one",
                clean=isinstance(exc, ConnectionClosedOK),
                busy=_code(exc) == TRY_AGAIN_LATER,
            ) from exc

    async def receive(self) -> str | bytes:
        try:
            return await self._ws.recv()
        except ConnectionClosedOK as exc:
            raise TtsConnectionClosed(f"the TTS session at {self._url} ended (code {_code(exc)})", clean=True) from exc
        except ConnectionClosed as exc:
            if _code(exc) == TRY_AGAIN_LATER:
                raise TtsConnectionClosed(
                    f"the TTS service at {self._url} is at capacity (it closed the session with 1013, try again "
                    f"later: {exc.rcvd.reason if exc.rcvd else ''!s})",
                    busy=True,
                ) from exc
            raise TtsConnectionClosed(
                f"the TTS session at {self._url} dropped (code {_code(exc)}); the server or network went away",
            ) from exc

    async def aclose(self) -> None:
        await self._ws.close()


def _code(exc: ConnectionClosed) -> int | None:
    frame = exc.rcvd or exc.sent
    return None if frame is None else frame.code


@dataclass(frozen=True, slots=True)
class WsTransport:
    """Opens TTS sessions at ``url`` (``ws://host:port/invocations-bidirectional-stream``)."""

    url: str
    open_timeout_s: float = TTS_CONNECT_TIMEOUT_S
    close_timeout_s: float = TTS_CLOSE_TIMEOUT_S

    async def connect(self) -> WsConnection:
        try:
            websocket = await connect(
                self.url,
                open_timeout=self.open_timeout_s,
                close_timeout=self.close_timeout_s,
                max_size=MAX_FRAME_BYTES,
                compression=None,
            )
        except (OSError, TimeoutError, InvalidHandshake, InvalidURI) as exc:
            raise TtsUnavailableError(
                f"cannot open a TTS session at {self.url}: {type(exc).__name__}: {exc}; "
                "check that the Kokoro container is running and the URL is right",
            ) from exc
        logger.debug("TTS session opened at %s", self.url)
        return WsConnection(websocket, self.url)


__all__ = ["MAX_FRAME_BYTES", "WsConnection", "WsTransport"]
