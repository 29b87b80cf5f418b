"""The engine exception tree.

Every error raised by :mod:`kokoro_server.engines` derives from :class:`EngineError`, and every message
says what the caller can do about it, so the server can forward it to a client unchanged.
"""

from __future__ import annotations


class EngineError(Exception):
    """Base class of every engine error; the message says what to do."""


class UnknownVoiceError(EngineError):
    """A voice name that the loaded voice bank does not have; the message names the available voices."""

    def __init__(self, name: str, available: list[str]) -> None:
        self.name = name
        self.available = list(available)
        super().__init__(f"unknown voice {name!r}: choose one of {', '.join(self.available)}")


class InvalidRequestError(EngineError, ValueError):
    """A malformed request argument (voice blend weights, speed); also a :class:`ValueError`."""


class ModelFilesError(EngineError):
    """Model or voice files are missing, truncated or corrupt (for example a SHA-256 mismatch)."""


class InferenceError(EngineError):
    """The network failed while synthesizing one segment."""
