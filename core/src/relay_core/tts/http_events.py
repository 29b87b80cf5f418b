"""The TTS request/response protocol (ARCHITECTURE §2): ``POST /invocations`` and its SSE events.

The request body is one JSON object ``{"text","voice","speed","stream","format","request_id"}``; only
``text`` is required. The SSE events of a streamed answer are the audio events of §3 (``audio_stream_start``,
``audio_chunk``, ``audio_stream_end``, ``error``), so one parser (:func:`relay_core.agent.events.parse_event`)
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
from relay_core.agent.events import AgentEventType
from relay_core.agent.events import AgentFailed as SseFailed
from relay_core.agent.events import AudioChunk as SseAudioChunk
from relay_core.agent.events import AudioStreamEnd as SseAudioStreamEnd
from relay_core.agent.events import AudioStreamStart as SseAudioStreamStart
from relay_core.errors import InvalidFieldError
from relay_core.fields import (
    JsonObject,
    decode_json_object,
    encode_json,
    get_bool,
    get_str,
    peek_request_id,
)
from relay_core.speech_options import DEFAULT_SPEECH, SpeechOptions, read_speech_options
from relay_core.tts.messages import TtsErrorCode, check_text, read_first_fragment_words, read_request_id

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
        TtsErrorCode.AT_CAPACITY: 503,
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
    AAC = "aac"

    @property
    def media_type(self) -> str:
        return _MEDIA_TYPES[self]

    @property
    def has_bitrate(self) -> bool:
        """Lossy formats whose bitrate a request may choose (``bitrate_kbps``)."""
        return self in (AudioFormat.MP3, AudioFormat.OPUS, AudioFormat.AAC)

    @property
    def whole_file_header(self) -> bool:
        """Formats whose header states the length (WAV sizes, FLAC's sample count): a non-streamed answer carries the
        real length; a streamed WAV says "unknown" (0xFFFFFFFF)."""
        return self in (AudioFormat.WAV, AudioFormat.FLAC)


_MEDIA_TYPES: Final = {
    AudioFormat.WAV: "audio/wav",
    AudioFormat.PCM: "audio/pcm",
    AudioFormat.MP3: "audio/mpeg",
    AudioFormat.OPUS: "audio/ogg",
    AudioFormat.FLAC: "audio/flac",
    AudioFormat.AAC: "audio/aac",
}


def parse_audio_format(
    value: str | None, *, default: AudioFormat, request_id: str | None = None, name: str = "format"
) -> AudioFormat:
    """The format named by ``value`` (case-insensitive); ``InvalidFieldError`` naming the field (``name``) and the
    valid formats otherwise."""
    if value is None or not value.strip():
        return default
    try:
        return AudioFormat(value.strip().lower())
    except ValueError as exc:
        valid = ", ".join(f.value for f in AudioFormat)
        raise InvalidFieldError(f"'{name}' must be one of {valid}; got {value[:20]!r}", request_id=request_id) from exc


def read_bitrate(obj: JsonObject, fmt: AudioFormat, *, request_id: str | None = None) -> int | None:
    """The optional ``bitrate_kbps`` field: a whole number of kbit/s for mp3, opus or aac."""
    value = obj.get("bitrate_kbps")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidFieldError("'bitrate_kbps' must be a whole number of kbit/s", request_id=request_id)
    if not fmt.has_bitrate:
        lossy = ", ".join(f.value for f in AudioFormat if f.has_bitrate)
        raise InvalidFieldError(
            f"'bitrate_kbps' applies to {lossy}, not {fmt.value}: leave it out", request_id=request_id
        )
    if not limits.MIN_BITRATE_KBPS <= value <= limits.MAX_BITRATE_KBPS:
        raise InvalidFieldError(
            f"'bitrate_kbps' must be between {limits.MIN_BITRATE_KBPS} and {limits.MAX_BITRATE_KBPS}; got {value}",
            request_id=request_id,
        )
    return value


@dataclass(frozen=True, slots=True)
class InvocationRequest:
    """A checked ``POST /invocations`` body."""

    text: str
    options: SpeechOptions = DEFAULT_SPEECH
    """Voice (None: the server's default) and speed; on the wire, flat fields of the body."""
    stream: bool = True
    format: AudioFormat = AudioFormat.WAV
    request_id: str | None = None
    bitrate_kbps: int | None = None
    first_fragment_words: int | None = None
    """As on ``synthesize``: cut the first segment after this many words (0 = no cut); None = server default."""

    def to_json(self) -> JsonObject:
        obj: JsonObject = {
            "text": self.text,
            **self.options.to_json_fields(),
            "stream": self.stream,
            "format": self.format.value,
        }
        if self.request_id is not None:
            obj["request_id"] = self.request_id
        if self.bitrate_kbps is not None:
            obj["bitrate_kbps"] = self.bitrate_kbps
        if self.first_fragment_words is not None:
            obj["first_fragment_words"] = self.first_fragment_words
        return obj


def parse_invocation(data: str | bytes, *, default_format: AudioFormat = AudioFormat.WAV) -> InvocationRequest:
    """Parse and check a ``/invocations`` body; ``default_format`` applies when it names none (SSE answers
    default to ``pcm``). Raises only ``ProtocolError`` subclasses."""
    obj = decode_json_object(data, max_bytes=MAX_BODY_BYTES, what="request body", per="request")
    rid = peek_request_id(obj)
    text = get_str(obj, "text", required=True, request_id=rid)
    assert text is not None  # required=True guarantees it
    check_text(text, request_id=rid)
    options = read_speech_options(obj, request_id=rid)
    stream = get_bool(obj, "stream", default=True, request_id=rid)
    fmt = parse_audio_format(get_str(obj, "format", request_id=rid), default=default_format, request_id=rid)
    request_id = read_request_id(obj, request_id=rid)
    return InvocationRequest(
        text=text,
        options=options,
        stream=stream,
        format=fmt,
        request_id=request_id,
        bitrate_kbps=read_bitrate(obj, fmt, request_id=rid),
        first_fragment_words=read_first_fragment_words(obj, request_id=rid),
    )


# --- OpenAI-compatible POST /v1/audio/speech ----------------------------------------------------------------

OPENAI_DEFAULT_FORMAT: Final = AudioFormat.MP3
"""OpenAI's default ``response_format``."""
OPENAI_MODELS: Final = ("kokoro", "tts-1", "tts-1-hd", "gpt-4o-mini-tts")
"""The model ids ``GET /v1/models`` lists; any ``model`` is accepted and the one Kokoro model answers."""
OPENAI_SSE_AUDIO_DELTA: Final = "speech.audio.delta"
OPENAI_SSE_AUDIO_DONE: Final = "speech.audio.done"


class OpenAiStreamFormat(StrEnum):
    """OpenAI's ``stream_format``: the audio file as a body, or SSE events carrying it in base64."""

    AUDIO = "audio"
    SSE = "sse"


@dataclass(frozen=True, slots=True)
class OpenAiSpeechRequest:
    """A checked ``/v1/audio/speech`` body. ``options.voice`` is as given (an OpenAI name is mapped by the server)."""

    input: str
    options: SpeechOptions = DEFAULT_SPEECH
    format: AudioFormat = OPENAI_DEFAULT_FORMAT
    stream_format: OpenAiStreamFormat = OpenAiStreamFormat.AUDIO
    model: str | None = None
    bitrate_kbps: int | None = None


def parse_openai_speech(
    data: str | bytes, *, default_format: AudioFormat = OPENAI_DEFAULT_FORMAT
) -> OpenAiSpeechRequest:
    """Parse and check an OpenAI ``/v1/audio/speech`` body (``model``, ``input``, ``voice``, ``response_format``
    (default ``default_format``), ``speed``, ``stream_format``, ``instructions`` (accepted, unused), and this
    server's ``bitrate_kbps``). Errors name OpenAI's fields. Raises only ``ProtocolError`` subclasses."""
    obj = decode_json_object(data, max_bytes=MAX_BODY_BYTES, what="request body", per="request")
    text = get_str(obj, "input", required=True)
    assert text is not None  # required=True guarantees it
    check_text(text, name="input")
    model = get_str(obj, "model", max_chars=200)
    get_str(obj, "instructions", max_chars=limits.MAX_TEXT_CHARS)
    options = read_speech_options(obj)
    fmt = parse_audio_format(get_str(obj, "response_format"), default=default_format, name="response_format")
    stream_format = get_str(obj, "stream_format")
    try:
        parsed_stream = OpenAiStreamFormat((stream_format or OpenAiStreamFormat.AUDIO.value).strip().lower())
    except ValueError as exc:
        valid = ", ".join(f.value for f in OpenAiStreamFormat)
        raise InvalidFieldError(f"'stream_format' must be one of {valid}; got {str(stream_format)[:20]!r}") from exc
    return OpenAiSpeechRequest(
        input=text,
        options=options,
        format=fmt,
        stream_format=parsed_stream,
        model=model,
        bitrate_kbps=read_bitrate(obj, fmt),
    )


def openai_audio_delta(audio_b64: str) -> str:
    """One OpenAI SSE event's JSON: a piece of the audio file, base64."""
    return encode_json({"type": OPENAI_SSE_AUDIO_DELTA, "audio": audio_b64})


def openai_error(*, code: str, message: str) -> str:
    """An OpenAI SSE stream's failure event's JSON (the audio so far is incomplete)."""
    return encode_json({"type": "error", "error": {"code": code, "message": message}})


def openai_audio_done(*, input_characters: int) -> str:
    """The last OpenAI SSE event's JSON (``usage`` counts the input's characters; there are no tokens here)."""
    usage = {"input_tokens": input_characters, "output_tokens": 0, "total_tokens": input_characters}
    return encode_json({"type": OPENAI_SSE_AUDIO_DONE, "usage": usage})


__all__ = [
    "HEADER_AUDIO_DURATION",
    "HEADER_CHARACTERS",
    "HEADER_INFERENCE_TIME_MS",
    "HEADER_RTF",
    "HTTP_STATUS",
    "MAX_BODY_BYTES",
    "OPENAI_DEFAULT_FORMAT",
    "OPENAI_MODELS",
    "OPENAI_SSE_AUDIO_DELTA",
    "OPENAI_SSE_AUDIO_DONE",
    "SSE_AUDIO_CHUNK",
    "SSE_AUDIO_STREAM_END",
    "SSE_AUDIO_STREAM_START",
    "SSE_CHUNK_BYTES",
    "SSE_ERROR",
    "SSE_MEDIA_TYPE",
    "AudioFormat",
    "InvocationRequest",
    "OpenAiSpeechRequest",
    "OpenAiStreamFormat",
    "SseAudioChunk",
    "SseAudioStreamEnd",
    "SseAudioStreamStart",
    "SseFailed",
    "check_text",
    "http_status",
    "openai_audio_delta",
    "openai_audio_done",
    "openai_error",
    "parse_audio_format",
    "parse_invocation",
    "parse_openai_speech",
    "read_bitrate",
]
