"""One exception tree for everything relay_core rejects.

Every error carries a stable machine-readable ``code`` (sent to peers in ``error`` messages), a message
that says what to do, and the ``request_id`` it concerns when one is known.
"""

from __future__ import annotations


class RelayError(Exception):
    """Base of every error raised by relay_core."""

    code: str = "relay_error"

    def __init__(self, message: str, *, request_id: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.request_id = request_id
        if code is not None:
            self.code = code


class ProtocolError(RelayError):
    """A peer sent something that is not a valid message of the protocol."""

    code = "invalid_message"


class InvalidJsonError(ProtocolError):
    """The frame is not UTF-8 JSON, or not a JSON object."""

    code = "invalid_json"


class UnknownMessageTypeError(ProtocolError):
    """The message's ``type`` is not one this side accepts."""

    code = "unknown_type"


class InvalidFieldError(ProtocolError):
    """A field is missing, of the wrong type, or out of range."""

    code = "invalid_field"


class LimitExceededError(ProtocolError):
    """A message, text or queue exceeds a documented limit."""

    code = "limit_exceeded"


class SessionStateError(RelayError):
    """A state machine was driven in a way its current state does not allow (a programming error)."""

    code = "invalid_state"


class AudioFormatError(RelayError):
    """Audio bytes that do not match the declared sample format."""

    code = "invalid_audio"


class UnknownActionError(ProtocolError):
    """A client→gateway message whose ``action`` is missing or not one of the client protocol's actions."""

    code = "unknown_action"


class UnknownTurnError(RelayError):
    """A ``cancel`` or ``resume`` names a turn that does not exist or does not belong to the user."""

    code = "unknown_turn"


class ResumeExpiredError(RelayError):
    """A ``resume`` came too late: the turn's messages after ``after_seq`` are no longer kept."""

    code = "resume_expired"


class UncuttableAudioError(AudioFormatError):
    """A piece of audio had to be cut (to fit a message, or joined into one) but its codec forbids it: an Opus
    packet is one piece, whole or not at all. Send such pieces one per message and keep each within the budget."""

    code = "uncuttable_audio"


class InvalidUserIdError(RelayError, ValueError):
    """A user id that cannot name a user (empty): conversation ids and a user's erasure need one."""

    code = "invalid_user_id"
