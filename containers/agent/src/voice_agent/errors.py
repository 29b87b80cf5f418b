"""The voice agent's exception tree.

Every error says what failed and what to do about it. The turn turns these into §3 ``error`` events with a
stable code; none of them (and no stack trace) ever reaches the client as text it was not meant to see.
"""

from __future__ import annotations


class VoiceAgentError(Exception):
    """Base of every error the voice agent raises on purpose."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigError(VoiceAgentError):
    """The agent's configuration (CLI flags or environment) is missing or inconsistent."""


class TtsUnavailableError(VoiceAgentError):
    """A TTS session could not be opened (refused, unreachable, rejected handshake)."""


class TtsConnectionClosed(VoiceAgentError):  # noqa: N818 - the name the transport interface promises
    """The TTS stream ended: cleanly after ``close``, or dropped by the peer or the network.

    ``clean`` is True only when the server closed the stream normally (WebSocket code 1000 or the end of a
    SageMaker response body). ``busy`` is True when the server closed it as full (WebSocket code 1013, try again
    later): a new session may be admitted after a wait, so the caller backs off instead of counting a failure."""

    def __init__(self, message: str, *, clean: bool = False, busy: bool = False) -> None:
        super().__init__(message)
        self.clean = clean
        self.busy = busy


class TtsStreamError(VoiceAgentError):
    """The TTS stream itself reported an error (a SageMaker ``ModelStreamError`` or ``InternalStreamFailure``).

    ``code`` is the stream's error code (e.g. ``ModelError``), ``message`` its text."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.detail = message


__all__ = [
    "ConfigError",
    "TtsConnectionClosed",
    "TtsStreamError",
    "TtsUnavailableError",
    "VoiceAgentError",
]
