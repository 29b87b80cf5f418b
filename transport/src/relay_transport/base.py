"""The interface between the voice agent and a TTS session, whatever carries it.

A :class:`TtsTransport` opens sessions; a :class:`TtsConnection` is one open session of the §1 protocol.
Two implementations exist: ``ws`` (a plain WebSocket to the container; local, or any host running it) and
``sagemaker`` (SageMaker's bidirectional stream over HTTP/2). The turn only ever sees this interface, so
tests can wrap a transport to count sessions and inject faults.

Contract:
- :meth:`TtsConnection.send` sends one JSON message (as produced by ``relay_core.tts.client``); it raises
  :class:`~relay_transport.errors.TtsConnectionClosed` if the stream is already gone.
- :meth:`TtsConnection.receive` returns the next server frame: ``str`` for a JSON control message, ``bytes``
  for raw PCM. It raises :class:`~relay_transport.errors.TtsConnectionClosed` when the stream ends (``clean=True``
  after a normal close) and :class:`~relay_transport.errors.TtsStreamError` for an error the stream reports.
- :meth:`TtsConnection.aclose` releases the stream; safe to call more than once and after a drop.
- :meth:`TtsTransport.connect` raises :class:`~relay_transport.errors.TtsUnavailableError` when no session can
  be opened.
"""

from __future__ import annotations

from typing import Protocol


class TtsConnection(Protocol):
    """One open TTS session (ARCHITECTURE §1)."""

    async def send(self, frame: str) -> None:
        """Send one JSON message frame."""
        ...

    async def receive(self) -> str | bytes:
        """The next server frame: ``str`` = JSON control message, ``bytes`` = PCM."""
        ...

    async def aclose(self) -> None:
        """Release the stream (idempotent)."""
        ...


class TtsTransport(Protocol):
    """Opens TTS sessions."""

    async def connect(self) -> TtsConnection:
        """Open a new session; raises ``TtsUnavailableError`` when that is not possible."""
        ...


__all__ = ["TtsConnection", "TtsTransport"]
