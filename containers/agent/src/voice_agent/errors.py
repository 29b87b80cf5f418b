"""The voice agent's exception tree.

Every error says what failed and what to do about it. The turn turns these into §3 ``error`` events with a
stable code; none of them (and no stack trace) ever reaches the client as text it was not meant to see. The TTS
transports' errors are their own tree (:mod:`relay_transport.errors`).
"""

from __future__ import annotations


class VoiceAgentError(Exception):
    """Base of every error the voice agent raises on purpose."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigError(VoiceAgentError):
    """The agent's configuration (CLI flags or environment) is missing or inconsistent."""


__all__ = ["ConfigError", "VoiceAgentError"]
