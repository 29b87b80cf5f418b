"""The numbered messages of a turn (gateway → client, ARCHITECTURE §4, docs/client-protocol.md).

They are the agent events of §3 re-framed for API Gateway: every one carries the ``turn_id`` and one turn-wide
``seq`` (0, 1, 2, ... across text, audio and the terminal message, no gaps), and none is larger than
``limits.CLIENT_FRAME_BUDGET_BYTES`` in UTF-8. The agent's ``request_id`` and its per-kind counters are replaced
by ``turn_id`` and ``seq``; ``audio_chunk`` gains ``chunk`` (the agent's chunk index it came from) and
``sample_offset`` (where its first sample sits in the turn's audio), so a client can place every sample.

A turn ends with exactly one terminal message, ``agent_end`` or ``error`` (with ``seq``), and nothing follows
it. :func:`parse_server_message` reads any gateway → client message, telling a turn ``error`` (has ``seq``) from
a rejection (no ``seq``) by shape. It raises only ``ProtocolError`` subclasses.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from relay_core import limits
from relay_core.agent_events import AgentEventType, TurnMode, TurnStatus
from relay_core.client_messages import ClientErrorCode, GatewayError, GatewayMessageType, TurnAccepted, check_turn_id
from relay_core.errors import InvalidFieldError, UnknownMessageTypeError
from relay_core.fields import JsonObject, decode_json_object, encode_json, get_int, get_str
from relay_core.word_timings import WORD_TIMINGS_TYPE, WordTiming, parse_word_timings

TURN_MESSAGE_TYPES = frozenset({*(t.value for t in AgentEventType), WORD_TIMINGS_TYPE})
"""The ``type`` values of turn messages: the agent event types of §3 and ``word_timings``."""


@dataclass(frozen=True, slots=True)
class TurnStart:
    """seq 0 of a normal turn: the agent began (``agent_start``)."""

    turn_id: str
    seq: int
    mode: str = TurnMode.BIDI.value
    model: str = ""
    type: str = field(default=AgentEventType.AGENT_START.value, init=False)


@dataclass(frozen=True, slots=True)
class TurnText:
    """A piece of the reply's text (``text_delta``): concatenate ``text`` in seq order."""

    turn_id: str
    seq: int
    text: str
    type: str = field(default=AgentEventType.TEXT_DELTA.value, init=False)


@dataclass(frozen=True, slots=True)
class TurnAudioStart:
    """The turn's audio begins (``audio_stream_start``); its format holds for every ``audio_chunk`` after it."""

    turn_id: str
    seq: int
    voice: str
    format: str = limits.PCM_FORMAT
    sample_rate: int = limits.SAMPLE_RATE
    channels: int = limits.CHANNELS
    type: str = field(default=AgentEventType.AUDIO_STREAM_START.value, init=False)


@dataclass(frozen=True, slots=True)
class TurnAudio:
    """Whole samples of the reply's speech (``audio_chunk``): ``data`` is base64 of s16le PCM.

    ``chunk`` is the agent chunk it was cut from (one agent chunk may become several messages);
    ``sample_offset`` is the index of its first sample in the turn's audio (0 at ``audio_stream_start``)."""

    turn_id: str
    seq: int
    chunk: int
    sample_offset: int
    data: str
    type: str = field(default=AgentEventType.AUDIO_CHUNK.value, init=False)


@dataclass(frozen=True, slots=True)
class TurnAudioEnd:
    """The turn's audio is complete (``audio_stream_end``): ``total_samples`` samples in ``total_chunks``
    agent chunks, ``duration_s`` seconds."""

    turn_id: str
    seq: int
    total_chunks: int
    total_samples: int
    duration_s: float
    type: str = field(default=AgentEventType.AUDIO_STREAM_END.value, init=False)


@dataclass(frozen=True, slots=True)
class TurnEnd:
    """The turn's terminal message when it ran to its end (``agent_end``); ``status`` completed or cancelled."""

    turn_id: str
    seq: int
    status: str = TurnStatus.COMPLETED.value
    text_chars: int = 0
    sentences: int = 0
    first_audio_s: float | None = None
    elapsed_s: float = 0.0
    type: str = field(default=AgentEventType.AGENT_END.value, init=False)


@dataclass(frozen=True, slots=True)
class TurnError:
    """The turn's terminal message when it failed (``error`` WITH ``seq``): no more messages of it follow."""

    turn_id: str
    seq: int
    code: str
    message: str
    type: str = field(default=AgentEventType.ERROR.value, init=False)


@dataclass(frozen=True, slots=True)
class TurnWordTimings:
    """When each written word of the reply is spoken (``word_timings``), only in a turn started with
    ``"timings": true``: ``start_s``/``end_s`` are seconds on the turn's audio timeline (sample 0 of the turn's
    audio is 0.0 s), in spoken order across all of the turn's ``word_timings`` messages. It comes before the
    audio it describes; a long segment's words may span several messages (each numbered like any other)."""

    turn_id: str
    seq: int
    words: tuple[WordTiming, ...]
    type: str = field(default=WORD_TIMINGS_TYPE, init=False)


TurnMessage = TurnStart | TurnText | TurnAudioStart | TurnAudio | TurnAudioEnd | TurnEnd | TurnError | TurnWordTimings
ServerMessage = TurnMessage | TurnAccepted | GatewayError
"""Anything the gateway sends a client."""

TERMINAL_TURN_MESSAGES = (TurnEnd, TurnError)


def turn_message_to_json(message: TurnMessage) -> JsonObject:
    """The JSON object of a turn message, ``type`` first (``None`` fields left out)."""
    if isinstance(message, TurnWordTimings):
        return {
            "type": message.type,
            "turn_id": message.turn_id,
            "seq": message.seq,
            "words": [word.to_json() for word in message.words],
        }
    fields = asdict(message)
    return {"type": fields.pop("type"), **{k: v for k, v in fields.items() if v is not None}}


def serialize_turn_message(message: TurnMessage) -> str:
    """The JSON text frame of a turn message (compact, UTF-8 friendly)."""
    return encode_json(turn_message_to_json(message))


def serialize_server_message(message: ServerMessage) -> str:
    """The JSON text frame of any gateway → client message."""
    if isinstance(message, TurnAccepted | GatewayError):
        return encode_json(message.to_json())
    return serialize_turn_message(message)


def _get_float(obj: JsonObject, name: str, *, default: float | None = None) -> float | None:
    value = obj.get(name, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidFieldError(f"'{name}' must be a number")
    return float(value)


def _get_turn_id(obj: JsonObject) -> str:
    turn_id = get_str(obj, "turn_id", required=True)
    assert turn_id is not None
    return check_turn_id(turn_id)


def _parse_turn_message(obj: JsonObject, kind: str) -> TurnMessage:
    turn_id = _get_turn_id(obj)
    seq = get_int(obj, "seq")
    if kind == WORD_TIMINGS_TYPE:
        words = parse_word_timings({"type": WORD_TIMINGS_TYPE, "request_id": turn_id, "words": obj.get("words")})
        return TurnWordTimings(turn_id, seq, words.words)
    if kind == AgentEventType.AGENT_START:
        return TurnStart(
            turn_id, seq, mode=get_str(obj, "mode") or TurnMode.BIDI.value, model=get_str(obj, "model") or ""
        )
    if kind == AgentEventType.TEXT_DELTA:
        return TurnText(turn_id, seq, get_str(obj, "text", required=True) or "")
    if kind == AgentEventType.AUDIO_STREAM_START:
        return TurnAudioStart(
            turn_id,
            seq,
            voice=get_str(obj, "voice") or "",
            format=get_str(obj, "format") or limits.PCM_FORMAT,
            sample_rate=get_int(obj, "sample_rate", minimum=1) if "sample_rate" in obj else limits.SAMPLE_RATE,
            channels=get_int(obj, "channels", minimum=1) if "channels" in obj else limits.CHANNELS,
        )
    if kind == AgentEventType.AUDIO_CHUNK:
        return TurnAudio(
            turn_id,
            seq,
            chunk=get_int(obj, "chunk"),
            sample_offset=get_int(obj, "sample_offset"),
            data=get_str(obj, "data", required=True) or "",
        )
    if kind == AgentEventType.AUDIO_STREAM_END:
        return TurnAudioEnd(
            turn_id,
            seq,
            total_chunks=get_int(obj, "total_chunks"),
            total_samples=get_int(obj, "total_samples"),
            duration_s=_get_float(obj, "duration_s", default=0.0) or 0.0,
        )
    if kind == AgentEventType.AGENT_END:
        return TurnEnd(
            turn_id,
            seq,
            status=get_str(obj, "status") or TurnStatus.COMPLETED.value,
            text_chars=get_int(obj, "text_chars") if "text_chars" in obj else 0,
            sentences=get_int(obj, "sentences") if "sentences" in obj else 0,
            first_audio_s=_get_float(obj, "first_audio_s"),
            elapsed_s=_get_float(obj, "elapsed_s", default=0.0) or 0.0,
        )
    return TurnError(
        turn_id,
        seq,
        code=get_str(obj, "code") or ClientErrorCode.INTERNAL.value,
        message=get_str(obj, "message") or "",
    )


def parse_server_message(data: str | bytes | JsonObject) -> ServerMessage:
    """Parse one gateway → client message. An ``error`` with ``seq`` is a :class:`TurnError` (terminal message
    of a turn); without ``seq`` a :class:`GatewayError` (a rejection). Raises only ``ProtocolError`` subclasses."""
    obj: dict[str, Any] = (
        data
        if isinstance(data, dict)
        else decode_json_object(data, max_bytes=limits.APIGW_MESSAGE_BYTES, what="gateway message")
    )
    kind = obj.get("type")
    if kind == GatewayMessageType.TURN_ACCEPTED:
        return TurnAccepted(_get_turn_id(obj))
    if kind == GatewayMessageType.ERROR and "seq" not in obj:
        turn_id = get_str(obj, "turn_id")
        return GatewayError(
            code=get_str(obj, "code", required=True) or ClientErrorCode.INTERNAL.value,
            message=get_str(obj, "message") or "",
            turn_id=turn_id or None,
        )
    if isinstance(kind, str) and kind in TURN_MESSAGE_TYPES:
        return _parse_turn_message(obj, kind)
    raise UnknownMessageTypeError(f"unknown gateway message type {str(kind)[:40]!r}")


__all__ = [
    "TERMINAL_TURN_MESSAGES",
    "TURN_MESSAGE_TYPES",
    "ServerMessage",
    "TurnAudio",
    "TurnAudioEnd",
    "TurnAudioStart",
    "TurnEnd",
    "TurnError",
    "TurnMessage",
    "TurnStart",
    "TurnText",
    "TurnWordTimings",
    "parse_server_message",
    "serialize_server_message",
    "serialize_turn_message",
    "turn_message_to_json",
]
