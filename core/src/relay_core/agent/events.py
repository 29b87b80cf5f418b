"""Agent events (ARCHITECTURE §3): what the voice agent streams as SSE from AgentCore ``/invocations``,
and the payload it accepts.

Order of one turn: ``agent_start``; then interleaved ``text_delta`` (seq 0,1,2,...) and audio
(``audio_stream_start`` once, ``audio_chunk`` seq 0,1,2,..., ``audio_stream_end``), with at most one
``speech_waiting`` before any audio when the speech has to wait for the TTS service; finally exactly one of
``agent_end`` or ``error``. Every event carries ``request_id``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from relay_core import limits
from relay_core.audio import b64decode, b64encode
from relay_core.audio_piece import AUDIO_CHOICE_FIELD, CODECS, AudioChoice, AudioPiece, Codec, parse_audio_choice
from relay_core.errors import AudioFormatError, InvalidFieldError, UnknownActionError, UnknownMessageTypeError
from relay_core.fields import JsonObject, decode_json_object, encode_json, get_str
from relay_core.speech_options import DEFAULT_SPEECH, SpeechOptions, read_speech_options
from relay_core.word_timings import (
    PLAYED_MS_FIELD,
    TIMINGS_FIELD,
    WORD_TIMINGS_TYPE,
    WordTimings,
    parse_played_ms,
    parse_timings_flag,
    parse_word_timings,
)


class AgentEventType(StrEnum):
    AGENT_START = "agent_start"
    TEXT_DELTA = "text_delta"
    AUDIO_STREAM_START = "audio_stream_start"
    AUDIO_CHUNK = "audio_chunk"
    AUDIO_STREAM_END = "audio_stream_end"
    AGENT_END = "agent_end"
    ERROR = "error"
    SPEECH_WAITING = "speech_waiting"


class TurnMode(StrEnum):
    """``bidi``: sentences go to TTS as they are written; ``batch``: the whole reply at the end (baseline)."""

    BIDI = "bidi"
    BATCH = "batch"


class TurnStatus(StrEnum):
    COMPLETED = "completed"
    CANCELLED = "cancelled"


class AgentErrorCode(StrEnum):
    """Codes of the agent's ``error`` event; each names what the caller got wrong or what failed."""

    INVALID_PAYLOAD = "invalid_payload"
    """The payload is not a valid turn (missing prompt, bad mode, speed out of range, ...)."""
    UNKNOWN_ACTION = "unknown_action"
    """``action`` names nothing the agent does; the message lists the valid actions."""
    UNKNOWN_VOICE = "unknown_voice"
    """The TTS container has no such voice; refused before any text streams."""
    CONVERSATION_BUSY = "conversation_busy"
    """The conversation's previous turn did not end in time after its cancel; retry shortly."""
    TTS_UNAVAILABLE = "tts_unavailable"
    """No TTS session could be opened (even after the one retry); the text was delivered without audio."""
    TTS_FAILED = "tts_failed"
    """The TTS session was lost (after the one reconnect), or sentences could not be spoken."""
    TTS_AT_CAPACITY = "tts_at_capacity"
    """Speech is at capacity: the turn's TTS session waited in the service's admission queue for its whole bound
    (``at_capacity``; or, from a container that still refuses with 1013, the agent's ``TTS_CAPACITY_WAIT_S``); the
    text was delivered, the rest of the speech was not. Retry in a little while."""
    MODEL_FAILED = "model_failed"
    INTERNAL = "internal_error"


@dataclass(frozen=True, slots=True)
class AgentStart:
    request_id: str
    session_id: str | None = None
    mode: str = TurnMode.BIDI.value
    model: str = ""
    type: str = field(default=AgentEventType.AGENT_START.value, init=False)


@dataclass(frozen=True, slots=True)
class TextDelta:
    request_id: str
    seq: int
    text: str
    type: str = field(default=AgentEventType.TEXT_DELTA.value, init=False)


@dataclass(frozen=True, slots=True)
class AudioStreamStart:
    request_id: str
    voice: str
    format: str = limits.PCM_FORMAT
    sample_rate: int = limits.SAMPLE_RATE
    channels: int = limits.CHANNELS
    frame_samples: int | None = None
    """Opus only: samples each packet decodes to (``limits.OPUS_FRAME_SAMPLES``)."""
    pre_skip: int | None = None
    """Opus only: the encoder's lookahead, the decoded samples a client drops before the turn's first sample."""
    type: str = field(default=AgentEventType.AUDIO_STREAM_START.value, init=False)


@dataclass(frozen=True, slots=True)
class AudioChunk:
    """``data`` is base64 of s16le PCM, whole samples, or of whole Opus packets; ``seq`` counts chunks of the turn
    from 0.

    ``sample_offset`` (the index of its first sample in the turn's audio) is set only on the client wire
    (:mod:`relay_core.client.turn_messages`), where the relay may cut one agent chunk into several. An Opus chunk
    (``packet_bytes`` set: each packet's length, in order, summing to the data's length) also carries ``samples``:
    how many samples of the turn's PCM timeline its packets contribute once the stream's ``pre_skip`` is dropped at
    the start and the padding past ``total_samples`` at the end, so Opus chunks tile the timeline as PCM ones do."""

    request_id: str
    seq: int
    data: str
    sample_offset: int | None = None
    samples: int | None = None
    packet_bytes: tuple[int, ...] | None = None
    type: str = field(default=AgentEventType.AUDIO_CHUNK.value, init=False)

    @classmethod
    def of_piece(cls, request_id: str, seq: int, piece: AudioPiece, *, client_wire: bool = False) -> AudioChunk:
        """The chunk that carries ``piece`` (PCM); on the client wire its ``sample_offset`` is the piece's start."""
        return cls(request_id, seq, b64encode(piece.data), sample_offset=piece.start_sample if client_wire else None)

    @classmethod
    def of_packets(
        cls,
        request_id: str,
        seq: int,
        packets: list[bytes],
        samples: int,
        *,
        sample_offset: int | None = None,
    ) -> AudioChunk:
        """The Opus chunk of whole ``packets`` that contribute ``samples`` samples to the turn's timeline."""
        if not packets or any(not packet for packet in packets):
            raise AudioFormatError("an Opus audio_chunk carries one or more non-empty packets")
        lengths = tuple(len(packet) for packet in packets)
        return cls(request_id, seq, b64encode(b"".join(packets)), sample_offset, samples, lengths)

    @property
    def codec(self) -> Codec:
        """Opus when the chunk lists its packets, else s16le PCM."""
        return Codec.PCM_S16LE if self.packet_bytes is None else Codec.OPUS

    def packets(self) -> list[bytes]:
        """The chunk's Opus packets, whole and in order. Raises ``AudioFormatError`` for a PCM chunk or when
        ``packet_bytes`` does not add up to the data."""
        if self.packet_bytes is None:
            raise AudioFormatError("a PCM audio_chunk has no packets: read it with piece()")
        data = b64decode(self.data)
        if sum(self.packet_bytes) != len(data) or any(size < 1 for size in self.packet_bytes):
            raise AudioFormatError(
                f"audio_chunk {self.seq}: packet_bytes {list(self.packet_bytes)[:8]} do not tile its {len(data)} bytes"
            )
        out: list[bytes] = []
        at = 0
        for size in self.packet_bytes:
            out.append(data[at : at + size])
            at += size
        return out

    def piece(self, *, start_sample: int | None = None, codec: Codec | None = None) -> AudioPiece:
        """The audio this chunk carries, placed at ``start_sample`` (by default its ``sample_offset``, else 0), in
        ``codec`` (by default the chunk's own). An Opus chunk's piece holds its packets as one uncut unit of
        ``samples`` samples. Raises ``AudioFormatError`` for data that is not base64 of whole samples of PCM, or
        for an Opus chunk without ``samples`` or whose ``packet_bytes`` do not tile its data."""
        codec = self.codec if codec is None else codec
        start = (self.sample_offset if start_sample is None else start_sample) or 0
        if not CODECS[codec].cuttable:
            if self.samples is None:
                raise AudioFormatError(f"Opus audio_chunk {self.seq} does not say how many samples it holds")
            return AudioPiece(codec, b"".join(self.packets()), start, self.samples)
        data = b64decode(self.data)
        return AudioPiece(codec, data, start, CODECS[codec].samples_in(len(data)))


@dataclass(frozen=True, slots=True)
class AudioStreamEnd:
    """``total_samples`` (samples in the turn's audio) is set only on the client wire."""

    request_id: str
    total_chunks: int
    duration_s: float
    total_samples: int | None = None
    type: str = field(default=AgentEventType.AUDIO_STREAM_END.value, init=False)


@dataclass(frozen=True, slots=True)
class SpeechWaiting:
    """The turn's speech waits for a free slot of the TTS service (its session was ``queued``): a status a client
    shows as "voice starting…"; audio follows when the slot frees, or the turn ends ``tts_at_capacity``. At most
    once per turn, before any audio; ``position`` is the place in line when the session joined (1: next)."""

    request_id: str
    position: int = 1
    type: str = field(default=AgentEventType.SPEECH_WAITING.value, init=False)


@dataclass(frozen=True, slots=True)
class AgentEnd:
    request_id: str
    status: str = TurnStatus.COMPLETED.value
    text_chars: int = 0
    sentences: int = 0
    first_audio_s: float | None = None
    elapsed_s: float = 0.0
    type: str = field(default=AgentEventType.AGENT_END.value, init=False)


@dataclass(frozen=True, slots=True)
class AgentFailed:
    request_id: str
    code: str
    message: str
    type: str = field(default=AgentEventType.ERROR.value, init=False)


AgentEvent = (
    AgentStart
    | TextDelta
    | AudioStreamStart
    | AudioChunk
    | AudioStreamEnd
    | AgentEnd
    | AgentFailed
    | WordTimings
    | SpeechWaiting
)

_EVENT_CLASSES: dict[str, type[Any]] = {
    AgentEventType.AGENT_START: AgentStart,
    AgentEventType.TEXT_DELTA: TextDelta,
    AgentEventType.AUDIO_STREAM_START: AudioStreamStart,
    AgentEventType.AUDIO_CHUNK: AudioChunk,
    AgentEventType.AUDIO_STREAM_END: AudioStreamEnd,
    AgentEventType.AGENT_END: AgentEnd,
    AgentEventType.ERROR: AgentFailed,
    AgentEventType.SPEECH_WAITING: SpeechWaiting,
}

TERMINAL_EVENT_TYPES = frozenset({AgentEventType.AGENT_END.value, AgentEventType.ERROR.value})


def event_to_json(event: AgentEvent) -> JsonObject:
    """The JSON object for an event (``None`` fields left out)."""
    if isinstance(event, WordTimings):
        return event.to_json()
    return {k: v for k, v in asdict(event).items() if v is not None}


def serialize_event(event: AgentEvent) -> str:
    return encode_json(event_to_json(event))


def parse_event(data: str | bytes | JsonObject) -> AgentEvent:
    """Parse one agent event. Raises only ``ProtocolError`` subclasses."""
    obj = data if isinstance(data, dict) else decode_json_object(data, max_bytes=limits.APIGW_MESSAGE_BYTES * 8)
    kind = obj.get("type")
    if kind == WORD_TIMINGS_TYPE:
        return parse_word_timings(obj)
    cls = _EVENT_CLASSES.get(str(kind))
    if cls is None:
        raise UnknownMessageTypeError(f"unknown agent event type {str(kind)[:40]!r}")
    fields = {k: v for k, v in obj.items() if k != "type"}
    for spec in dataclasses.fields(cls):
        if spec.name in fields and not _matches(fields[spec.name], str(spec.type)):
            raise InvalidFieldError(f"agent event {kind!r}: field {spec.name!r} must be {spec.type}")
    if cls is AudioChunk and fields.get("packet_bytes") is not None:
        fields["packet_bytes"] = parse_packet_bytes(fields["packet_bytes"])
    try:
        event: AgentEvent = cls(**fields)
    except TypeError as exc:
        raise InvalidFieldError(f"agent event {kind!r} has missing or unexpected fields: {exc}") from exc
    if not event.request_id:
        raise InvalidFieldError(f"agent event {kind!r} needs a request_id")
    return event


def parse_packet_bytes(value: object) -> tuple[int, ...]:
    """An Opus chunk's ``packet_bytes``: a non-empty list of positive packet lengths."""
    if (
        not isinstance(value, list)
        or not value
        or any(isinstance(size, bool) or not isinstance(size, int) or size < 1 for size in value)
    ):
        raise InvalidFieldError("'packet_bytes' must be a non-empty list of positive integers (each packet's length)")
    return tuple(value)


_JSON_TYPES: dict[str, tuple[type, ...]] = {"str": (str,), "int": (int,), "float": (int, float), "None": (type(None),)}


def _matches(value: object, annotation: str) -> bool:
    """Whether a JSON value fits a field annotation such as ``"float | None"`` (bools are not numbers)."""
    allowed = tuple(t for name in annotation.split("|") for t in _JSON_TYPES.get(name.strip(), (object,)))
    if isinstance(value, bool):
        return bool in allowed or object in allowed
    return isinstance(value, allowed)


@dataclass(frozen=True, slots=True)
class AgentPayload:
    """What a client sends to the agent's ``/invocations``."""

    prompt: str
    mode: TurnMode = TurnMode.BIDI
    options: SpeechOptions = DEFAULT_SPEECH
    """How the reply is spoken (voice None: the agent's default); on the wire, flat fields of the payload."""
    request_id: str | None = None
    timings: bool = False
    """Ask for ``word_timings`` events (captions in step with the audio)."""
    audio: AudioChoice = AudioChoice.PCM
    """What the speech travels as: s16le PCM (the default) or one Opus stream for the turn."""

    def to_json(self) -> JsonObject:
        obj: JsonObject = {"prompt": self.prompt, "mode": self.mode.value, **self.options.to_json_fields()}
        if self.request_id is not None:
            obj["request_id"] = self.request_id
        if self.timings:
            obj[TIMINGS_FIELD] = True
        if self.audio is not AudioChoice.PCM:
            obj[AUDIO_CHOICE_FIELD] = self.audio.value
        return obj


CANCEL_ACTION = "cancel"
TURN_ACTION = "turn"
"""A turn's payload may say ``"action": "turn"``; an absent ``action`` means the same."""
AGENT_ACTIONS = (TURN_ACTION, CANCEL_ACTION)
"""Every ``action`` the agent's ``/invocations`` accepts."""
AGENTCORE_SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"
"""The header that names the conversation: invocations with the same value reach the same agent session."""


@dataclass(frozen=True, slots=True)
class AgentCancel:
    """Barge-in: cancel the running turn of the session (``request_id`` names one turn; None = every turn).

    Sent to the same ``/invocations`` (same AgentCore session id) as ``{"action": "cancel", "request_id"?}``."""

    request_id: str | None = None
    played_ms: int | None = None
    """Truthful barge-in: milliseconds of the turn's audio the listener played; the agent then keeps in history only
    the words heard (:func:`relay_core.word_timings.words_heard`). None: the history is left as it is."""

    def to_json(self) -> JsonObject:
        obj: JsonObject = {"action": CANCEL_ACTION}
        if self.request_id is not None:
            obj["request_id"] = self.request_id
        if self.played_ms is not None:
            obj[PLAYED_MS_FIELD] = self.played_ms
        return obj


def is_cancel(obj: object) -> bool:
    """Whether a decoded ``/invocations`` body is a cancel request rather than a turn."""
    return isinstance(obj, dict) and obj.get("action") == CANCEL_ACTION


def parse_cancel(obj: JsonObject) -> AgentCancel:
    """Parse and check a cancel request. Raises only ``ProtocolError`` subclasses."""
    return AgentCancel(
        request_id=get_str(obj, "request_id", max_chars=limits.MAX_REQUEST_ID_CHARS) or None,
        played_ms=parse_played_ms(obj),
    )


def parse_request(data: str | bytes | JsonObject) -> AgentPayload | AgentCancel:
    """Parse an ``/invocations`` body: a turn (``action`` absent or ``"turn"``) or a cancel.

    Raises only ``ProtocolError`` subclasses; an unknown ``action`` raises :class:`UnknownActionError`, whose
    message names the valid actions."""
    obj = data if isinstance(data, dict) else decode_json_object(data, max_bytes=limits.MAX_PROMPT_CHARS * 4 + 4096)
    action = obj.get("action", TURN_ACTION)
    if action == CANCEL_ACTION:
        return parse_cancel(obj)
    if action == TURN_ACTION:
        return parse_payload(obj)
    valid = ", ".join(repr(a) for a in AGENT_ACTIONS)
    shown = repr(action)[:40] if isinstance(action, str) else f"a {type(action).__name__}"
    raise UnknownActionError(
        f"unknown action {shown}: the agent accepts {valid} (a turn needs 'prompt'; no 'action' means a turn)"
    )


def parse_payload(data: str | bytes | JsonObject) -> AgentPayload:
    """Parse and check an agent payload. Raises only ``ProtocolError`` subclasses."""
    obj = data if isinstance(data, dict) else decode_json_object(data, max_bytes=limits.MAX_PROMPT_CHARS * 4 + 4096)
    prompt = get_str(obj, "prompt", required=True, allow_empty=False, max_chars=limits.MAX_PROMPT_CHARS)
    mode_text = get_str(obj, "mode") or TurnMode.BIDI.value
    try:
        mode = TurnMode(mode_text)
    except ValueError as exc:
        raise InvalidFieldError(f"'mode' must be 'bidi' or 'batch'; got {mode_text[:20]!r}") from exc
    options = read_speech_options(obj)
    request_id = get_str(obj, "request_id", max_chars=limits.MAX_REQUEST_ID_CHARS)
    assert prompt is not None
    return AgentPayload(
        prompt=prompt,
        mode=mode,
        options=options,
        request_id=request_id or None,
        timings=parse_timings_flag(obj),
        audio=parse_audio_choice(obj),
    )


__all__ = [
    "AGENTCORE_SESSION_HEADER",
    "AGENT_ACTIONS",
    "CANCEL_ACTION",
    "TERMINAL_EVENT_TYPES",
    "TURN_ACTION",
    "AgentCancel",
    "AgentEnd",
    "AgentErrorCode",
    "AgentEvent",
    "AgentEventType",
    "AgentFailed",
    "AgentPayload",
    "AgentStart",
    "AudioChunk",
    "AudioStreamEnd",
    "AudioStreamStart",
    "SpeechWaiting",
    "TextDelta",
    "TurnMode",
    "TurnStatus",
    "UnknownActionError",
    "event_to_json",
    "is_cancel",
    "parse_cancel",
    "parse_event",
    "parse_packet_bytes",
    "parse_payload",
    "parse_request",
    "serialize_event",
]
