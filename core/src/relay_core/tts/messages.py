"""The TTS session protocol (ARCHITECTURE §1) as typed, checked messages.

Client → server frames may be text or binary; both carry one UTF-8 JSON object. A message without ``type`` is a
``synthesize`` request, so the reference sample's clients (``{"text","voice","speed","request_id"}`` in binary
frames) work unchanged. Server → client control messages are JSON text frames; audio is raw PCM (s16le,
24 kHz, mono, no header) in binary frames belonging to the request most recently started.

``parse_client_message`` never raises anything but :class:`~relay_core.errors.ProtocolError` subclasses.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import Any, Final

from relay_core import limits
from relay_core.errors import InvalidFieldError, LimitExceededError, ProtocolError, UnknownMessageTypeError
from relay_core.fields import (
    JsonObject,
    decode_json_object,
    encode_json,
    get_bool,
    get_int,
    get_str,
    peek_request_id,
)
from relay_core.speech_options import DEFAULT_SPEECH, SpeechOptions, read_speech_options
from relay_core.word_timings import (
    TIMINGS_FIELD,
    WORD_TIMINGS_TYPE,
    WordTimings,
    parse_timings_flag,
    parse_word_timings,
)

SESSION_PATH = "/invocations-bidirectional-stream"
"""The container's WebSocket route of the TTS session (SageMaker's bidirectional-stream invocation path)."""


class TtsMessageType(StrEnum):
    """Every ``type`` of the TTS session protocol."""

    SYNTHESIZE = "synthesize"
    CANCEL = "cancel"
    CLOSE = "close"
    SYNTHESIS_START = "synthesis_start"
    SYNTHESIS_COMPLETE = "synthesis_complete"
    SYNTHESIS_CANCELLED = "synthesis_cancelled"
    WORD_TIMINGS = WORD_TIMINGS_TYPE
    ERROR = "error"
    QUEUED = "queued"
    ADMITTED = "admitted"


class TtsErrorCode(StrEnum):
    """Codes of server ``error`` messages; each names what the client got wrong or what failed."""

    INVALID_JSON = "invalid_json"
    INVALID_MESSAGE = "invalid_message"
    INVALID_FIELD = "invalid_field"
    UNKNOWN_TYPE = "unknown_type"
    LIMIT_EXCEEDED = "limit_exceeded"
    UNKNOWN_VOICE = "unknown_voice"
    UNKNOWN_REQUEST = "unknown_request"
    DUPLICATE_REQUEST_ID = "duplicate_request_id"
    QUEUE_FULL = "queue_full"
    AT_CAPACITY = "at_capacity"
    """Session-level (no ``request_id``): the session waited in the container's admission queue for the whole
    bound (``max_wait_s`` of its ``queued`` message) without a free slot; every request it held ends with it and the
    socket closes with 1000. Try again in a little while, or on another instance."""
    SESSION_CLOSING = "session_closing"
    SYNTHESIS_FAILED = "synthesis_failed"
    INTERNAL = "internal_error"
    MODEL_NOT_READY = "model_not_ready"
    """The model is still loading (or failed to load): retry when ``GET /ping`` answers 200 (HTTP routes, 503)."""
    UNSUPPORTED_TEXT = "unsupported_text"
    """The text is in a script the server's G2P language cannot speak; the message names the language to use."""
    NOT_FOUND = "not_found"
    """HTTP only: no route has this path."""
    METHOD_NOT_ALLOWED = "method_not_allowed"
    """HTTP only: the route exists but not with this method."""


# --- client → server -------------------------------------------------------------------------------------


def check_request_id(request_id: str | None) -> None:
    """The one request-id rule of every route (WebSocket and HTTP): absent, or 1..MAX_REQUEST_ID_CHARS printable
    characters. Raises ``LimitExceededError`` for a longer id, ``InvalidFieldError`` for an empty or unprintable one."""
    if request_id is None:
        return
    if len(request_id) > limits.MAX_REQUEST_ID_CHARS:
        raise LimitExceededError(
            f"'request_id' has {len(request_id)} characters; the limit is {limits.MAX_REQUEST_ID_CHARS}: "
            "use a shorter id",
            request_id=request_id,
        )
    if not request_id or not request_id.isprintable():
        raise InvalidFieldError(
            f"'request_id' must be 1 to {limits.MAX_REQUEST_ID_CHARS} printable characters; "
            "leave it out to have the server assign one",
        )


def read_request_id(obj: JsonObject, *, request_id: str | None = None) -> str | None:
    """The ``request_id`` field of a client message or request body, checked by :func:`check_request_id`."""
    value = get_str(obj, "request_id", request_id=request_id)
    try:
        check_request_id(value)
    except ProtocolError as exc:
        exc.request_id = exc.request_id or request_id
        raise
    return value


def check_text(text: str, *, request_id: str | None = None, name: str = "text") -> None:
    """The one text rule of every route: something to say, at most ``MAX_TEXT_CHARS`` characters. Raises
    ``InvalidFieldError`` for blank text and ``LimitExceededError`` for too much; ``name`` is the field's name on
    that route (OpenAI's is ``input``)."""
    if not text.strip():
        raise InvalidFieldError(f"'{name}' must contain something to say", request_id=request_id)
    if len(text) > limits.MAX_TEXT_CHARS:
        raise LimitExceededError(
            f"'{name}' has {len(text)} characters; the limit is {limits.MAX_TEXT_CHARS}: "
            "split it into several requests",
            request_id=request_id,
        )


@dataclass(frozen=True, slots=True)
class Synthesize:
    """Speak ``text`` as ``options`` say; queued behind the session's earlier requests."""

    text: str
    options: SpeechOptions = DEFAULT_SPEECH
    """Voice (None: the server default) and speed; on the wire, flat fields of the message."""
    request_id: str | None = None
    first_fragment_words: int | None = None
    """Cut the request's first segment early at a clause mark or phrase boundary after this many words (0 = no
    cut); None leaves it to the server (which cuts while the session has heard nothing yet)."""
    timings: bool = False
    """Ask for a ``word_timings`` text frame before each segment's PCM (:mod:`relay_core.word_timings`)."""

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Raise a ``ProtocolError`` subclass if any field breaks the protocol's rules."""
        check_request_id(self.request_id)
        rid = self.request_id
        check_text(self.text, request_id=rid)
        check_first_fragment_words(self.first_fragment_words, request_id=rid)

    def with_request_id(self, request_id: str) -> Synthesize:
        """A copy carrying ``request_id`` (the server assigns one when the client gave none)."""
        return replace(self, request_id=request_id)

    def to_json(self) -> JsonObject:
        obj: JsonObject = {"type": TtsMessageType.SYNTHESIZE.value, "text": self.text, **self.options.to_json_fields()}
        if self.request_id is not None:
            obj["request_id"] = self.request_id
        if self.first_fragment_words is not None:
            obj["first_fragment_words"] = self.first_fragment_words
        if self.timings:
            obj[TIMINGS_FIELD] = True
        return obj


MAX_FIRST_FRAGMENT_WORDS: Final = 50
"""The largest ``first_fragment_words`` a request may ask for."""


def check_first_fragment_words(value: object, *, request_id: str | None = None) -> None:
    """Raise ``InvalidFieldError`` unless ``value`` is None or a whole number 0..MAX_FIRST_FRAGMENT_WORDS."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_FIRST_FRAGMENT_WORDS:
        raise InvalidFieldError(
            f"'first_fragment_words' must be a whole number from 0 (no early cut) to {MAX_FIRST_FRAGMENT_WORDS}; "
            f"got {value!r}",
            request_id=request_id,
        )


def read_first_fragment_words(obj: JsonObject, *, request_id: str | None = None) -> int | None:
    """The optional ``first_fragment_words`` field of ``synthesize`` and ``/invocations``."""
    value = obj.get("first_fragment_words")
    check_first_fragment_words(value, request_id=request_id)
    assert value is None or isinstance(value, int)
    return value


@dataclass(frozen=True, slots=True)
class Cancel:
    """Drop a queued request and stop a running one at its next segment boundary; ``None`` means all."""

    request_id: str | None = None

    def __post_init__(self) -> None:
        check_request_id(self.request_id)

    def to_json(self) -> JsonObject:
        obj: JsonObject = {"type": TtsMessageType.CANCEL.value}
        if self.request_id is not None:
            obj["request_id"] = self.request_id
        return obj


@dataclass(frozen=True, slots=True)
class Close:
    """Finish what is queued, then close the WebSocket with code 1000."""

    def to_json(self) -> JsonObject:
        return {"type": TtsMessageType.CLOSE.value}


ClientMessage = Synthesize | Cancel | Close


def _parse_synthesize(obj: JsonObject, rid: str | None) -> Synthesize:
    text = get_str(obj, "text", required=True, request_id=rid)
    options = read_speech_options(obj, request_id=rid)
    request_id = read_request_id(obj, request_id=rid)
    fragment_words = read_first_fragment_words(obj, request_id=rid)
    assert text is not None  # required=True guarantees it
    try:
        return Synthesize(
            text=text,
            options=options,
            request_id=request_id,
            first_fragment_words=fragment_words,
            timings=parse_timings_flag(obj),
        )
    except ProtocolError as exc:
        exc.request_id = exc.request_id or rid
        raise


def parse_client_message(data: str | bytes) -> ClientMessage:
    """Parse one client frame (text or binary). Raises only ``ProtocolError`` subclasses, with ``request_id`` set
    when the frame named one, so the error can be addressed to that request."""
    obj = decode_json_object(data, max_bytes=limits.MAX_MESSAGE_BYTES)
    rid = peek_request_id(obj)
    kind = obj.get("type", TtsMessageType.SYNTHESIZE.value)
    if kind == TtsMessageType.SYNTHESIZE:
        return _parse_synthesize(obj, rid)
    if kind == TtsMessageType.CANCEL:
        return Cancel(request_id=read_request_id(obj, request_id=rid))
    if kind == TtsMessageType.CLOSE:
        return Close()
    accepted = ", ".join(t.value for t in (TtsMessageType.SYNTHESIZE, TtsMessageType.CANCEL, TtsMessageType.CLOSE))
    raise UnknownMessageTypeError(f"unknown message type {str(kind)[:40]!r}: send one of {accepted}", request_id=rid)


# --- server → client -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SynthesisStart:
    """A request began; the binary frames that follow until its end message are its PCM. ``options`` are the
    ones it is spoken with, its ``voice`` filled in (the server's default when the request named none)."""

    request_id: str
    options: SpeechOptions
    sample_rate: int = limits.SAMPLE_RATE
    encoding: str = limits.PCM_FORMAT
    channels: int = limits.CHANNELS
    characters: int = 0
    type: str = field(default=TtsMessageType.SYNTHESIS_START.value, init=False)

    def to_json(self) -> JsonObject:
        return {
            "request_id": self.request_id,
            **self.options.to_json_fields(),
            "sample_rate": self.sample_rate,
            "encoding": self.encoding,
            "channels": self.channels,
            "characters": self.characters,
            "type": self.type,
        }


@dataclass(frozen=True, slots=True)
class SynthesisComplete:
    """A request finished; ``total_duration_s`` of audio was sent in ``segments`` segments."""

    request_id: str
    total_duration_s: float
    elapsed_s: float
    segments: int
    audio_bytes: int
    first_audio_s: float | None
    type: str = field(default=TtsMessageType.SYNTHESIS_COMPLETE.value, init=False)


@dataclass(frozen=True, slots=True)
class SynthesisCancelled:
    """A request was cancelled; no more PCM of it follows."""

    request_id: str
    audio_bytes: int = 0
    type: str = field(default=TtsMessageType.SYNTHESIS_CANCELLED.value, init=False)


@dataclass(frozen=True, slots=True)
class TtsFailed:
    """Something about one message or request failed; the session goes on.

    ``rejected`` tells the two kinds apart. True: the server refused one client frame (bad JSON, a duplicate or
    unknown id, an unknown voice, a full queue...); nothing was queued by that frame and no other request changed,
    so ``request_id`` (the id the frame named, if any) may belong to a request that is still running and will end
    on its own. False: the request ``request_id`` was accepted and has now ended with this error."""

    code: str
    message: str
    request_id: str | None = None
    rejected: bool = False
    type: str = field(default=TtsMessageType.ERROR.value, init=False)

    @classmethod
    def from_exception(cls, exc: ProtocolError, *, rejected: bool = True) -> TtsFailed:
        """A protocol error as an ``error`` message: by default a rejected frame."""
        return cls(code=exc.code, message=exc.message, request_id=exc.request_id, rejected=rejected)


QUEUED_REPEAT_S: Final = 10.0
"""A waiting session hears ``queued`` again this often, with its place now: its stream never idles while it waits,
whatever idle limit a proxy on the way (SageMaker's front end) applies, and a client can show the line moving."""


@dataclass(frozen=True, slots=True)
class SessionQueued:
    """The session was accepted while every slot of the instance is taken: it waits, first come first served.

    Sent first, and only to a session that has to wait, then again every :data:`QUEUED_REPEAT_S` while it waits.
    ``position`` is its place in the admission queue (1: next to start); ``max_wait_s`` bounds the wait from when
    it joined, after which the session ends with a session-level ``error`` ``at_capacity``. Requests sent meanwhile
    are checked and kept as usual, and run, in order, once the session is ``admitted``; ``cancel`` and ``close``
    work as usual."""

    position: int
    max_wait_s: float
    type: str = field(default=TtsMessageType.QUEUED.value, init=False)


@dataclass(frozen=True, slots=True)
class SessionAdmitted:
    """A queued session got its slot after ``waited_s`` seconds: its requests start now (``synthesis_start``...).
    Sent only to a session that was ``queued``."""

    waited_s: float
    type: str = field(default=TtsMessageType.ADMITTED.value, init=False)


ServerMessage = (
    SynthesisStart | SynthesisComplete | SynthesisCancelled | TtsFailed | WordTimings | SessionQueued | SessionAdmitted
)
"""Every server control message; ``word_timings`` (:mod:`relay_core.word_timings`) belongs to the running request;
``queued`` and ``admitted`` belong to the session (no ``request_id``)."""

SERVER_MESSAGE_MAX_BYTES: Final = limits.APIGW_MESSAGE_BYTES
"""Largest server control frame a client accepts: a ``word_timings`` frame may carry a whole segment's words."""


def serialize(message: ClientMessage | ServerMessage) -> str:
    """The JSON text frame for a message of either direction."""
    if isinstance(message, Synthesize | Cancel | Close | WordTimings | SynthesisStart):
        return encode_json(message.to_json())
    obj: dict[str, Any] = asdict(message)
    return encode_json({k: v for k, v in obj.items() if v is not None or k == "request_id"})


def parse_server_message(data: str | bytes) -> ServerMessage:
    """Parse one server control frame (what a TTS client receives). Raises only ``ProtocolError``."""
    obj = decode_json_object(data, max_bytes=SERVER_MESSAGE_MAX_BYTES, what="server message")
    kind = obj.get("type")
    if kind == TtsMessageType.WORD_TIMINGS:
        return parse_word_timings(obj)
    rid = get_str(obj, "request_id")
    try:
        if kind == TtsMessageType.SYNTHESIS_START:
            return SynthesisStart(
                request_id=_required(rid, "request_id"),
                options=read_speech_options(obj),
                sample_rate=get_int(obj, "sample_rate", minimum=1),
                encoding=get_str(obj, "encoding") or limits.PCM_FORMAT,
                channels=get_int(obj, "channels", minimum=1),
                characters=int(obj.get("characters") or 0),
            )
        if kind == TtsMessageType.SYNTHESIS_COMPLETE:
            first = obj.get("first_audio_s")
            return SynthesisComplete(
                request_id=_required(rid, "request_id"),
                total_duration_s=float(obj["total_duration_s"]),
                elapsed_s=float(obj["elapsed_s"]),
                segments=int(obj.get("segments") or 0),
                audio_bytes=int(obj.get("audio_bytes") or 0),
                first_audio_s=None if first is None else float(first),
            )
        if kind == TtsMessageType.SYNTHESIS_CANCELLED:
            return SynthesisCancelled(
                request_id=_required(rid, "request_id"), audio_bytes=int(obj.get("audio_bytes") or 0)
            )
        if kind == TtsMessageType.QUEUED:
            return SessionQueued(position=get_int(obj, "position", minimum=1), max_wait_s=float(obj["max_wait_s"]))
        if kind == TtsMessageType.ADMITTED:
            return SessionAdmitted(waited_s=float(obj["waited_s"]))
        if kind == TtsMessageType.ERROR:
            return TtsFailed(
                code=get_str(obj, "code") or TtsErrorCode.INTERNAL.value,
                message=get_str(obj, "message") or "",
                request_id=rid,
                rejected=get_bool(obj, "rejected", default=False),
            )
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidFieldError(f"server message {kind!r} has a missing or malformed field: {exc}") from exc
    raise UnknownMessageTypeError(f"unknown server message type {str(kind)[:40]!r}")


def _required(value: str | None, name: str) -> str:
    if not value:
        raise InvalidFieldError(f"'{name}' is required")
    return value
