"""The TTS transports' exception tree: what can go wrong between a client and a Kokoro session.

Every error says what failed and what to do about it. :class:`TransportError` is the root, so a caller (the voice
agent's turn, the ops smoke test) catches one class for "the speech service could not be reached or dropped".
"""

from __future__ import annotations


class TransportError(Exception):
    """Base of every error a TTS transport raises on purpose."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class TransportConfigError(TransportError):
    """A transport was built with settings it cannot work with (no endpoint name, no AWS region)."""


class TtsUnavailableError(TransportError):
    """A TTS session could not be opened (refused, unreachable, rejected handshake)."""


class TtsConnectionClosed(TransportError):  # noqa: N818 - the name the transport interface promises
    """The TTS stream ended: cleanly after ``close``, or dropped by the peer or the network.

    ``clean`` is True only when the server closed the stream normally (WebSocket code 1000 or the end of a
    SageMaker response body). ``busy`` is True when the server closed it as full (WebSocket code 1013, try again
    later): a new session may be admitted after a wait, so the caller backs off instead of counting a failure."""

    def __init__(self, message: str, *, clean: bool = False, busy: bool = False) -> None:
        super().__init__(message)
        self.clean = clean
        self.busy = busy


class TtsStreamError(TransportError):
    """The TTS stream itself reported an error (a SageMaker ``ModelStreamError`` or ``InternalStreamFailure``).

    ``code`` is the stream's error code (e.g. ``ModelError``), ``message`` its text."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.detail = message


__all__ = [
    "TransportConfigError",
    "TransportError",
    "TtsConnectionClosed",
    "TtsStreamError",
    "TtsUnavailableError",
]
