"""The numbered messages of a turn (gateway → client, ARCHITECTURE §4, docs/client-protocol.md).

A turn message is not a vocabulary of its own: it is one agent event of §3 (:mod:`relay_core.agent.events`) in
a numbered envelope, :class:`TurnMessage`. The envelope carries the ``turn_id`` and one turn-wide ``seq`` (0, 1,
2, ... across text, audio and the terminal message, no gaps); on the client wire it replaces the event's
``request_id`` (and ``session_id``), and the agent's per-kind counters give way to it: an ``audio_chunk``'s own
number is written ``chunk``, a ``text_delta``'s is left out. :data:`CLIENT_FIELDS` names, per event type, the
event fields the client wire carries and in which order; two of them exist only there (``audio_chunk``'s
``sample_offset``, where its first sample sits in the turn's audio: the ``start_sample`` of the
:class:`~relay_core.audio_piece.AudioPiece` it carries, :meth:`~relay_core.agent.events.AudioChunk.piece`; and
``audio_stream_end``'s ``total_samples``), set by the relay's framer. An Opus turn's messages also carry
``frame_samples`` and ``pre_skip`` (``audio_stream_start``) and ``samples`` and ``packet_bytes``
(``audio_chunk``); a PCM turn's messages never do. None is larger than
``limits.CLIENT_FRAME_BUDGET_BYTES`` in UTF-8.

A turn ends with exactly one terminal message (:attr:`TurnMessage.terminal`: ``agent_end`` or ``error`` with
``seq``), and nothing follows it. :func:`parse_server_message` reads any gateway → client message, telling a turn
``error`` (has ``seq``) from a rejection (no ``seq``) by shape. It raises only ``ProtocolError`` subclasses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from relay_core import limits
from relay_core.agent import events as ev
from relay_core.client.messages import (
    ClientErrorCode,
    ConversationStarted,
    GatewayMessageType,
    Rejection,
    TurnAccepted,
    check_turn_id,
)
from relay_core.errors import InvalidFieldError, UnknownMessageTypeError
from relay_core.fields import JsonObject, decode_json_object, encode_json, get_int, get_str
from relay_core.word_timings import WORD_TIMINGS_TYPE, WordTimings, parse_word_timings

TURN_MESSAGE_TYPES = frozenset({*(t.value for t in ev.AgentEventType), WORD_TIMINGS_TYPE})
"""The ``type`` values of turn messages: the agent event types of §3 and ``word_timings``."""

CHUNK_FIELD = "chunk"
"""The client wire's name for an ``audio_chunk``'s agent chunk number (the agent event's ``seq``)."""

CLIENT_FIELDS: dict[str, tuple[str, ...]] = {
    ev.AgentEventType.AGENT_START: ("mode", "model"),
    ev.AgentEventType.TEXT_DELTA: ("text",),
    ev.AgentEventType.AUDIO_STREAM_START: ("voice", "format", "sample_rate", "channels", "frame_samples", "pre_skip"),
    ev.AgentEventType.AUDIO_CHUNK: (CHUNK_FIELD, "sample_offset", "samples", "packet_bytes", "data"),
    ev.AgentEventType.AUDIO_STREAM_END: ("total_chunks", "total_samples", "duration_s"),
    ev.AgentEventType.AGENT_END: ("status", "text_chars", "sentences", "first_audio_s", "elapsed_s"),
    ev.AgentEventType.ERROR: ("code", "message"),
    ev.AgentEventType.SPEECH_WAITING: ("position",),
    WORD_TIMINGS_TYPE: ("index", "words"),
}
"""Per event type, the fields a turn message carries after ``type``, ``turn_id`` and ``seq``, in wire order."""

ENVELOPE_FIELDS = ("type", "turn_id", "seq")
"""The fields every turn message has, first, in this order."""


@dataclass(frozen=True, slots=True)
class TurnMessage:
    """Message ``seq`` of turn ``turn_id``: one agent event, numbered. The event's ``request_id`` is the turn id."""

    turn_id: str
    seq: int
    event: ev.AgentEvent

    @property
    def type(self) -> str:
        """The wire ``type`` (the event's)."""
        return self.event.type

    @property
    def terminal(self) -> bool:
        """Whether this is the turn's terminal message (``agent_end`` or ``error``)."""
        return self.event.type in ev.TERMINAL_EVENT_TYPES


ServerMessage = TurnMessage | TurnAccepted | ConversationStarted | Rejection
"""Anything the gateway sends a client."""


def turn_message_to_json(message: TurnMessage) -> JsonObject:
    """The JSON object of a turn message: ``type``, ``turn_id``, ``seq``, then :data:`CLIENT_FIELDS` of its
    event in order (``None`` fields left out)."""
    event = message.event
    obj: JsonObject = {"type": event.type, "turn_id": message.turn_id, "seq": message.seq}
    if isinstance(event, WordTimings):
        if event.index is not None:
            obj["index"] = event.index
        obj["words"] = [word.to_json() for word in event.words]
        return obj
    for name in CLIENT_FIELDS[event.type]:
        value = event.seq if name == CHUNK_FIELD and isinstance(event, ev.AudioChunk) else getattr(event, name)
        if value is not None:
            obj[name] = value
    return obj


def serialize_turn_message(message: TurnMessage) -> str:
    """The JSON text frame of a turn message (compact, UTF-8 friendly)."""
    return encode_json(turn_message_to_json(message))


def serialize_server_message(message: ServerMessage) -> str:
    """The JSON text frame of any gateway → client message."""
    if isinstance(message, TurnAccepted | ConversationStarted | Rejection):
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


def _parse_event(obj: JsonObject, kind: str, turn_id: str, seq: int) -> ev.AgentEvent:
    """The event of a turn message; a ``text_delta``'s own number is the message's ``seq``."""
    if kind == WORD_TIMINGS_TYPE:
        return parse_word_timings(
            {"type": WORD_TIMINGS_TYPE, "request_id": turn_id, "index": obj.get("index"), "words": obj.get("words")}
        )
    if kind == ev.AgentEventType.AGENT_START:
        mode = get_str(obj, "mode") or ev.TurnMode.BIDI.value
        return ev.AgentStart(turn_id, mode=mode, model=get_str(obj, "model") or "")
    if kind == ev.AgentEventType.TEXT_DELTA:
        return ev.TextDelta(turn_id, seq, get_str(obj, "text", required=True) or "")
    if kind == ev.AgentEventType.AUDIO_STREAM_START:
        return ev.AudioStreamStart(
            turn_id,
            voice=get_str(obj, "voice") or "",
            format=get_str(obj, "format") or limits.PCM_FORMAT,
            sample_rate=get_int(obj, "sample_rate", minimum=1) if "sample_rate" in obj else limits.SAMPLE_RATE,
            channels=get_int(obj, "channels", minimum=1) if "channels" in obj else limits.CHANNELS,
            frame_samples=get_int(obj, "frame_samples", minimum=1) if "frame_samples" in obj else None,
            pre_skip=get_int(obj, "pre_skip") if "pre_skip" in obj else None,
        )
    if kind == ev.AgentEventType.AUDIO_CHUNK:
        return ev.AudioChunk(
            turn_id,
            seq=get_int(obj, CHUNK_FIELD),
            sample_offset=get_int(obj, "sample_offset"),
            data=get_str(obj, "data", required=True) or "",
            samples=get_int(obj, "samples") if "samples" in obj else None,
            packet_bytes=ev.parse_packet_bytes(obj["packet_bytes"]) if "packet_bytes" in obj else None,
        )
    if kind == ev.AgentEventType.AUDIO_STREAM_END:
        return ev.AudioStreamEnd(
            turn_id,
            total_chunks=get_int(obj, "total_chunks"),
            total_samples=get_int(obj, "total_samples"),
            duration_s=_get_float(obj, "duration_s", default=0.0) or 0.0,
        )
    if kind == ev.AgentEventType.AGENT_END:
        return ev.AgentEnd(
            turn_id,
            status=get_str(obj, "status") or ev.TurnStatus.COMPLETED.value,
            text_chars=get_int(obj, "text_chars") if "text_chars" in obj else 0,
            sentences=get_int(obj, "sentences") if "sentences" in obj else 0,
            first_audio_s=_get_float(obj, "first_audio_s"),
            elapsed_s=_get_float(obj, "elapsed_s", default=0.0) or 0.0,
        )
    if kind == ev.AgentEventType.SPEECH_WAITING:
        return ev.SpeechWaiting(turn_id, position=get_int(obj, "position", minimum=1))
    return ev.AgentFailed(
        turn_id, code=get_str(obj, "code") or ClientErrorCode.INTERNAL.value, message=get_str(obj, "message") or ""
    )


def parse_server_message(data: str | bytes | JsonObject) -> ServerMessage:
    """Parse one gateway → client message. An ``error`` with ``seq`` is a terminal :class:`TurnMessage`; without
    ``seq`` a :class:`Rejection` (a rejection). Raises only ``ProtocolError`` subclasses."""
    obj: dict[str, Any] = (
        data
        if isinstance(data, dict)
        else decode_json_object(data, max_bytes=limits.APIGW_MESSAGE_BYTES, what="gateway message")
    )
    kind = obj.get("type")
    if kind == GatewayMessageType.TURN_ACCEPTED:
        return TurnAccepted(_get_turn_id(obj))
    if kind == GatewayMessageType.CONVERSATION_STARTED:
        return ConversationStarted()
    if kind == GatewayMessageType.ERROR and "seq" not in obj:
        turn_id = get_str(obj, "turn_id")
        return Rejection(
            code=get_str(obj, "code", required=True) or ClientErrorCode.INTERNAL.value,
            message=get_str(obj, "message") or "",
            turn_id=turn_id or None,
        )
    if isinstance(kind, str) and kind in TURN_MESSAGE_TYPES:
        turn_id = _get_turn_id(obj)
        seq = get_int(obj, "seq")
        return TurnMessage(turn_id, seq, _parse_event(obj, kind, turn_id, seq))
    raise UnknownMessageTypeError(f"unknown gateway message type {str(kind)[:40]!r}")


__all__ = [
    "CHUNK_FIELD",
    "CLIENT_FIELDS",
    "ENVELOPE_FIELDS",
    "TURN_MESSAGE_TYPES",
    "ServerMessage",
    "TurnMessage",
    "parse_server_message",
    "serialize_server_message",
    "serialize_turn_message",
    "turn_message_to_json",
]
