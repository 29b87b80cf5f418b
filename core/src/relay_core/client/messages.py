"""The client protocol (ARCHITECTURE §4, docs/client-protocol.md): what a mobile or web client sends to the API
Gateway WebSocket, and the gateway's own control messages back (``turn_accepted`` and rejections).

Client → gateway messages are JSON objects selected by ``"action"``: ``sendMessage``, ``cancel``, ``resume``,
``newConversation``.
The messages of a running turn (gateway → client, numbered by ``seq``) live in :mod:`relay_core.client.turn_messages`.

A rejection (``error`` without ``seq``) answers one client message and changes nothing else; an ``error`` WITH
``seq`` is the terminal message of a turn. ``parse_client_message`` raises only ``ProtocolError`` subclasses.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field, replace
from enum import StrEnum

from relay_core import limits
from relay_core.agent.events import AgentPayload, TurnMode, parse_payload
from relay_core.audio_piece import AUDIO_CHOICE_FIELD, AudioChoice
from relay_core.errors import InvalidFieldError, ProtocolError, RelayError, UnknownActionError
from relay_core.fields import JsonObject, decode_json_object, encode_json, get_str
from relay_core.speech_options import DEFAULT_SPEECH, SPEECH_OPTION_FIELDS, SpeechOptions
from relay_core.word_timings import PLAYED_MS_FIELD, TIMINGS_FIELD, parse_played_ms


class ClientAction(StrEnum):
    """Every ``action`` a client may send (API Gateway's route keys, selected by ``$request.body.action``)."""

    SEND_MESSAGE = "sendMessage"
    CANCEL = "cancel"
    RESUME = "resume"
    NEW_CONVERSATION = "newConversation"


VALID_ACTIONS_TEXT = ", ".join(action.value for action in ClientAction)
"""The valid actions as the gateway names them in an ``unknown_action`` error."""


class ClientErrorCode(StrEnum):
    """Every ``code`` of a gateway ``error`` message; docs/client-protocol.md says what a client does about each."""

    INVALID_JSON = "invalid_json"
    INVALID_MESSAGE = "invalid_message"
    INVALID_FIELD = "invalid_field"
    UNKNOWN_ACTION = "unknown_action"
    LIMIT_EXCEEDED = "limit_exceeded"
    UNAUTHORIZED = "unauthorized"
    TURN_IN_PROGRESS = "turn_in_progress"
    RATE_LIMITED = "rate_limited"
    UNKNOWN_TURN = "unknown_turn"
    RESUME_EXPIRED = "resume_expired"
    AGENT_UNAVAILABLE = "agent_unavailable"
    INTERNAL = "internal_error"


class GatewayMessageType(StrEnum):
    """The ``type`` of the gateway's own control messages (not part of a turn's numbered stream)."""

    TURN_ACCEPTED = "turn_accepted"
    CONVERSATION_STARTED = "conversation_started"
    ERROR = "error"


# --- turn ids ----------------------------------------------------------------------------------------------

_TURN_ID_PATTERN = re.compile(r"[A-Za-z0-9_.:-]+")


def check_turn_id(turn_id: str, *, name: str = "turn_id") -> str:
    """Return ``turn_id`` if it is 1..MAX_TURN_ID_CHARS of ``A-Z a-z 0-9 - _ . :``; else raise InvalidFieldError."""
    if not 0 < len(turn_id) <= limits.MAX_TURN_ID_CHARS or not _TURN_ID_PATTERN.fullmatch(turn_id):
        raise InvalidFieldError(
            f"'{name}' must be 1 to {limits.MAX_TURN_ID_CHARS} characters of A-Z, a-z, 0-9, '-', '_', '.', ':'"
        )
    return turn_id


def new_turn_id() -> str:
    """A fresh random turn id (``t-`` + 22 URL-safe characters), valid under :func:`check_turn_id`."""
    return "t-" + secrets.token_urlsafe(16)


# --- client → gateway ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SendMessage:
    """Start a turn: the agent answers ``prompt`` in text and speech. ``turn_id`` None: the gateway assigns one.

    ``prompt``, ``mode``, ``options``, ``timings`` and ``audio`` follow exactly the agent payload's rules
    (:func:`relay_core.agent.events.parse_payload`). ``timings`` True asks for the turn's ``word_timings``
    messages (captions in step with the audio); False (the default) leaves the turn's messages as they were."""

    prompt: str
    options: SpeechOptions = DEFAULT_SPEECH
    """How the reply is spoken; on the wire, flat fields of the message (:mod:`relay_core.speech_options`)."""
    mode: TurnMode = TurnMode.BIDI
    turn_id: str | None = None
    timings: bool = False
    audio: AudioChoice = AudioChoice.PCM
    """What the turn's speech travels as (``audio``): PCM (the default) or Opus packets."""

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Raise a ``ProtocolError`` subclass unless every field is valid (``mode`` may be given as its text)."""
        if self.turn_id is not None:
            check_turn_id(self.turn_id)
        if not isinstance(self.mode, TurnMode):
            object.__setattr__(self, "mode", self.to_agent_payload().mode)
        if not isinstance(self.audio, AudioChoice):
            object.__setattr__(self, "audio", self.to_agent_payload().audio)
        self.to_agent_payload()

    def with_turn_id(self, turn_id: str) -> SendMessage:
        """A copy carrying ``turn_id`` (the gateway assigns one when the client gave none)."""
        return replace(self, turn_id=turn_id)

    def to_agent_payload(self, request_id: str | None = None) -> AgentPayload:
        """The payload for the agent's ``/invocations``; ``request_id`` defaults to the turn id."""
        obj: JsonObject = {"prompt": self.prompt, "mode": str(self.mode), **self.options.to_json_fields()}
        if self.timings:
            obj[TIMINGS_FIELD] = True
        obj[AUDIO_CHOICE_FIELD] = str(self.audio)
        rid = request_id if request_id is not None else self.turn_id
        if rid is not None:
            obj["request_id"] = rid
        return parse_payload(obj)

    def to_json(self) -> JsonObject:
        obj: JsonObject = {
            "action": ClientAction.SEND_MESSAGE.value,
            "prompt": self.prompt,
            **self.options.to_json_fields(),
            "mode": self.mode.value,
        }
        if self.turn_id is not None:
            obj["turn_id"] = self.turn_id
        if self.timings:
            obj[TIMINGS_FIELD] = True
        if self.audio is not AudioChoice.PCM:
            obj[AUDIO_CHOICE_FIELD] = self.audio.value
        return obj


@dataclass(frozen=True, slots=True)
class Cancel:
    """Stop a turn (barge-in). ``turn_id`` None: the user's running turn, if any.

    ``played_ms``: how many milliseconds of the turn's audio the listener played (a player knows it); the agent
    then keeps in its conversation history only the words heard, marked as interrupted
    (:func:`relay_core.word_timings.words_heard`). None: the history keeps the whole reply."""

    turn_id: str | None = None
    played_ms: int | None = None

    def __post_init__(self) -> None:
        if self.turn_id is not None:
            check_turn_id(self.turn_id)
        if self.played_ms is not None:
            object.__setattr__(self, "played_ms", parse_played_ms({PLAYED_MS_FIELD: self.played_ms}))

    def to_json(self) -> JsonObject:
        obj: JsonObject = {"action": ClientAction.CANCEL.value}
        if self.turn_id is not None:
            obj["turn_id"] = self.turn_id
        if self.played_ms is not None:
            obj[PLAYED_MS_FIELD] = self.played_ms
        return obj


@dataclass(frozen=True, slots=True)
class Resume:
    """After a reconnect: send every message of ``turn_id`` with ``seq > after_seq``, then the rest live.

    ``after_seq`` is the last seq the client holds without a gap; -1 means from the start."""

    turn_id: str
    after_seq: int

    def __post_init__(self) -> None:
        check_turn_id(self.turn_id)
        if isinstance(self.after_seq, bool) or not isinstance(self.after_seq, int) or self.after_seq < -1:
            raise InvalidFieldError("'after_seq' must be an integer >= -1 (the last seq you hold; -1 = none)")

    def to_json(self) -> JsonObject:
        return {"action": ClientAction.RESUME.value, "turn_id": self.turn_id, "after_seq": self.after_seq}


@dataclass(frozen=True, slots=True)
class NewConversation:
    """Start over: the user's next turns, on every connection of theirs, belong to a fresh conversation whose
    agent remembers nothing said before. A turn already running keeps its own conversation to its end.

    Answered ``conversation_started`` once the switch is made; send the next ``sendMessage`` after that answer
    (API Gateway does not keep the order of two messages of a connection, so one sent at once may still reach the
    old conversation). Sending it again is harmless: each starts another fresh conversation."""

    def to_json(self) -> JsonObject:
        return {"action": ClientAction.NEW_CONVERSATION.value}


ClientMessage = SendMessage | Cancel | Resume | NewConversation


def unknown_action_error(action: object) -> UnknownActionError:
    """The error ``$default`` answers: it names the valid actions."""
    if action is None:
        return UnknownActionError(f"every message needs an 'action': one of {VALID_ACTIONS_TEXT}")
    shown = action[:40] if isinstance(action, str) else type(action).__name__
    return UnknownActionError(f"unknown action {shown!r}: send one of {VALID_ACTIONS_TEXT}")


def _parse_send_message(obj: JsonObject) -> SendMessage:
    fields = ("prompt", "mode", *SPEECH_OPTION_FIELDS, TIMINGS_FIELD, AUDIO_CHOICE_FIELD)
    payload = parse_payload({k: obj[k] for k in fields if k in obj})
    return SendMessage(
        payload.prompt,
        options=payload.options,
        mode=payload.mode,
        turn_id=_get_turn_id(obj, required=False),
        timings=payload.timings,
        audio=payload.audio,
    )


def _get_turn_id(obj: JsonObject, *, required: bool) -> str | None:
    turn_id = get_str(obj, "turn_id", required=required)
    return None if turn_id is None else check_turn_id(turn_id)


def _parse_resume(obj: JsonObject) -> Resume:
    turn_id = _get_turn_id(obj, required=True)
    after_seq = obj.get("after_seq")
    if isinstance(after_seq, bool) or not isinstance(after_seq, int):
        raise InvalidFieldError("'after_seq' is required: an integer >= -1 (the last seq you hold; -1 = none)")
    assert turn_id is not None
    return Resume(turn_id, after_seq)


def parse_client_message(data: str | bytes | JsonObject) -> ClientMessage:
    """Parse one client→gateway message (text or binary frame, UTF-8 JSON; or an already decoded object).

    Raises only ``ProtocolError`` subclasses: ``invalid_json``, ``limit_exceeded`` (over
    CLIENT_MESSAGE_MAX_BYTES or a field limit), ``unknown_action`` (naming the valid ones), ``invalid_field``.
    Unknown extra fields are ignored so that newer clients keep working."""
    obj = data if isinstance(data, dict) else decode_json_object(data, max_bytes=limits.CLIENT_MESSAGE_MAX_BYTES)
    action = obj.get("action")
    if action == ClientAction.SEND_MESSAGE:
        return _parse_send_message(obj)
    if action == ClientAction.CANCEL:
        return Cancel(_get_turn_id(obj, required=False), played_ms=parse_played_ms(obj))
    if action == ClientAction.RESUME:
        return _parse_resume(obj)
    if action == ClientAction.NEW_CONVERSATION:
        return NewConversation()
    raise unknown_action_error(action)


# --- gateway → client control messages ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TurnAccepted:
    """``sendMessage`` was accepted: the turn's numbered messages (seq 0, 1, ...) follow."""

    turn_id: str
    type: str = field(default=GatewayMessageType.TURN_ACCEPTED.value, init=False)

    def to_json(self) -> JsonObject:
        return {"type": self.type, "turn_id": self.turn_id}


@dataclass(frozen=True, slots=True)
class ConversationStarted:
    """``newConversation`` was done: the user's next turn starts a fresh conversation (the agent remembers nothing
    said before it)."""

    type: str = field(default=GatewayMessageType.CONVERSATION_STARTED.value, init=False)

    def to_json(self) -> JsonObject:
        return {"type": self.type}


_CLIENT_CODES = frozenset(code.value for code in ClientErrorCode)
_INTERNAL_MESSAGE = "the gateway could not handle this message: try again; if it keeps failing, report it"


@dataclass(frozen=True, slots=True)
class Rejection:
    """A rejection of one client message (no ``seq``): nothing else changed, the connection stays usable."""

    code: str
    message: str
    turn_id: str | None = None
    type: str = field(default=GatewayMessageType.ERROR.value, init=False)

    def to_json(self) -> JsonObject:
        obj: JsonObject = {"type": self.type, "code": self.code, "message": self.message}
        if self.turn_id is not None:
            obj["turn_id"] = self.turn_id
        return obj

    @classmethod
    def from_exception(cls, exc: BaseException, *, turn_id: str | None = None) -> Rejection:
        """The client ``error`` for any exception: a relay_core error keeps its code (mapped onto
        :class:`ClientErrorCode`) and its message; anything else becomes ``internal_error`` with a generic
        message. Never a traceback, never an exception's own text unless relay_core wrote it for peers."""
        if not isinstance(exc, RelayError):
            return cls(ClientErrorCode.INTERNAL.value, _INTERNAL_MESSAGE, turn_id)
        code = client_error_code(exc)
        message = exc.message if code != ClientErrorCode.INTERNAL else _INTERNAL_MESSAGE
        return cls(code.value, message, turn_id)


def client_error_code(exc: RelayError) -> ClientErrorCode:
    """The client code for a relay_core error: its own code when that is a client code, ``invalid_message``
    for any other protocol error, ``internal_error`` for the rest (state or audio errors are our bugs)."""
    if exc.code in _CLIENT_CODES:
        return ClientErrorCode(exc.code)
    if isinstance(exc, ProtocolError):
        return ClientErrorCode.INVALID_MESSAGE
    return ClientErrorCode.INTERNAL


def error_message(exc: BaseException, *, turn_id: str | None = None) -> str:
    """The serialized ``error`` rejection for ``exc`` (see :meth:`Rejection.from_exception`)."""
    return serialize(Rejection.from_exception(exc, turn_id=turn_id))


def serialize(message: ClientMessage | TurnAccepted | ConversationStarted | Rejection) -> str:
    """The JSON text frame for a client action or a gateway control message."""
    return encode_json(message.to_json())


__all__ = [
    "VALID_ACTIONS_TEXT",
    "Cancel",
    "ClientAction",
    "ClientErrorCode",
    "ClientMessage",
    "ConversationStarted",
    "GatewayMessageType",
    "NewConversation",
    "Rejection",
    "Resume",
    "SendMessage",
    "TurnAccepted",
    "check_turn_id",
    "client_error_code",
    "error_message",
    "new_turn_id",
    "parse_client_message",
    "serialize",
    "unknown_action_error",
]
