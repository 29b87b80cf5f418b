"""The TTS request/response protocol (ARCHITECTURE §2): ``POST /invocations`` and its SSE events.

The request body is one JSON object ``{"text","voice","speed","stream","format","request_id"}``; only
``text`` is required. The SSE events of a streamed answer are the audio events of §3 (``audio_stream_start``,
``audio_chunk``, ``audio_stream_end``, ``error``), so one parser (:func:`relay_core.agent_events.parse_event`)
reads both; this module names them for the HTTP side and adds what §3 lacks: the audio formats, their media
types, and the timing headers of non-streaming answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Final

from relay_core import limits
from relay_core.agent_events import AgentError as SseError
from relay_core.agent_events import AgentEventType
from relay_core.agent_events import AudioChunk as SseAudioChunk
from relay_core.agent_events import AudioStreamEnd as SseAudioStreamEnd
from relay_core.agent_events import AudioStreamStart as SseAudioStreamStart
from relay_core.errors import InvalidFieldError
from relay_core.fields import JsonObject, decode_json_object, get_bool, get_number, get_str, peek_request_id
from relay_core.tts_messages import TtsErrorCode, check_text, read_request_id

SSE_AUDIO_STREAM_START: Final = AgentEventType.AUDIO_STREAM_START.value
SSE_AUDIO_CHUNK: Final = AgentEventType.AUDIO_CHUNK.value
SSE_AUDIO_STREAM_END: Final = AgentEventType.AUDIO_STREAM_END.value
SSE_ERROR: Final = AgentEventType.ERROR.value
SSE_MEDIA_TYPE: Final = "text/event-stream"

SSE_CHUNK_BYTES: Final = 24_000
"""Most audio bytes (before base64) in one ``audio_chunk`` event: half a second of PCM."""
MAX_BODY_BYTES: Final = limits.MAX_MESSAGE_BYTES
"""Bytes in one ``/invocations`` or ``/v1/audio/speech`` request body."""

HEADER_AUDIO_DURATION: Final = "X-Audio-Duration"
"""Seconds of audio in a non-streaming answer."""
HEADER_INFERENCE_TIME_MS: Final = "X-Inference-Time-Ms"
"""Milliseconds from the request's arrival to the last audio."""
HEADER_RTF: Final = "X-RTF"
"""Real-time factor: inference time / audio duration (below 1 is faster than real time)."""
HEADER_CHARACTERS: Final = "X-Characters-Processed"


HTTP_STATUS: Final[Mapping[str, int]] = MappingProxyType(
    {
        TtsErrorCode.INVALID_JSON: 400,
        TtsErrorCode.INVALID_MESSAGE: 400,
        TtsErrorCode.INVALID_FIELD: 400,
        TtsErrorCode.UNKNOWN_TYPE: 400,
        TtsErrorCode.UNKNOWN_VOICE: 400,
        TtsErrorCode.UNSUPPORTED_TEXT: 400,
        TtsErrorCode.LIMIT_EXCEEDED: 413,
        TtsErrorCode.NOT_FOUND: 404,
        TtsErrorCode.UNKNOWN_REQUEST: 404,
        TtsErrorCode.METHOD_NOT_ALLOWED: 405,
        TtsErrorCode.DUPLICATE_REQUEST_ID: 409,
        TtsErrorCode.SESSION_CLOSING: 409,
        TtsErrorCode.QUEUE_FULL: 429,
        TtsErrorCode.SYNTHESIS_FAILED: 500,
        TtsErrorCode.INTERNAL: 500,
        TtsErrorCode.MODEL_NOT_READY: 503,
    }
)
"""The one HTTP status of each error code (every ``TtsErrorCode`` has one): every limit (body size, text length,
request id length) is 413, every other mistake in a request 400, a model still loading 503."""


def http_status(code: str) -> int:
    """The HTTP status for an error ``code``; 500 for a code this table does not know (a server bug)."""
    return HTTP_STATUS.get(code, 500)


class AudioFormat(StrEnum):
    """Formats of ``/invocations`` answers. ``pcm`` is raw s16le, 24 kHz, mono, no header."""

    WAV = "wav"
    PCM = "pcm"
    MP3 = "mp3"
    OPUS = "opus"
    FLAC = "flac"

    @property
    def media_type(self) -> str:
        return _MEDIA_TYPES[self]


_MEDIA_TYPES: Final = {
    AudioFormat.WAV: "audio/wav",
    AudioFormat.PCM: "audio/pcm",
    AudioFormat.MP3: "audio/mpeg",
    AudioFormat.OPUS: "audio/ogg",
    AudioFormat.FLAC: "audio/flac",
}


def parse_audio_format(value: str | None, *, default: AudioFormat, request_id: str | None = None) -> AudioFormat:
    """The format named by ``value`` (case-insensitive); ``InvalidFieldError`` naming the valid ones otherwise."""
    if value is None or not value.strip():
        return default
    try:
        return AudioFormat(value.strip().lower())
    except ValueError as exc:
        valid = ", ".join(f.value for f in AudioFormat)
        raise InvalidFieldError(f"'format' must be one of {valid}; got {value[:20]!r}", request_id=request_id) from exc


@dataclass(frozen=True, slots=True)
class InvocationRequest:
    """A checked ``POST /invocations`` body. ``voice`` None means the server's default voice."""

    text: str
    voice: str | None = None
    speed: float = limits.DEFAULT_SPEED
    stream: bool = True
    format: AudioFormat = AudioFormat.WAV
    request_id: str | None = None

    def to_json(self) -> JsonObject:
        obj: JsonObject = {"text": self.text, "speed": self.speed, "stream": self.stream, "format": self.format.value}
        if self.voice is not None:
            obj["voice"] = self.voice
        if self.request_id is not None:
            obj["request_id"] = self.request_id
        return obj


def parse_invocation(data: str | bytes, *, default_format: AudioFormat = AudioFormat.WAV) -> InvocationRequest:
    """Parse and check a ``/invocations`` body; ``default_format`` applies when it names none (SSE answers
    default to ``pcm``). Raises only ``ProtocolError`` subclasses."""
    obj = decode_json_object(data, max_bytes=MAX_BODY_BYTES, what="request body", per="request")
    rid = peek_request_id(obj)
    text = get_str(obj, "text", required=True, request_id=rid)
    assert text is not None  # required=True guarantees it
    check_text(text, request_id=rid)
    voice = get_str(obj, "voice", max_chars=limits.MAX_VOICE_SPEC_CHARS, request_id=rid)
    speed = get_number(
        obj, "speed", default=limits.DEFAULT_SPEED, minimum=limits.MIN_SPEED, maximum=limits.MAX_SPEED, request_id=rid
    )
    stream = get_bool(obj, "stream", default=True, request_id=rid)
    fmt = parse_audio_format(get_str(obj, "format", request_id=rid), default=default_format, request_id=rid)
    request_id = read_request_id(obj, request_id=rid)
    return InvocationRequest(
        text=text, voice=voice or None, speed=speed, stream=stream, format=fmt, request_id=request_id
    )


__all__ = [
    "HEADER_AUDIO_DURATION",
    "HEADER_CHARACTERS",
    "HEADER_INFERENCE_TIME_MS",
    "HEADER_RTF",
    "HTTP_STATUS",
    "MAX_BODY_BYTES",
    "SSE_AUDIO_CHUNK",
    "SSE_AUDIO_STREAM_END",
    "SSE_AUDIO_STREAM_START",
    "SSE_CHUNK_BYTES",
    "SSE_ERROR",
    "SSE_MEDIA_TYPE",
    "AudioFormat",
    "InvocationRequest",
    "SseAudioChunk",
    "SseAudioStreamEnd",
    "SseAudioStreamStart",
    "SseError",
    "check_text",
    "http_status",
    "parse_audio_format",
    "parse_invocation",
]
