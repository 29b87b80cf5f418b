"""HTTP answers carrying speech (``speech_responses``): streamed audio, SSE events, or one whole file with timing
headers.

Shared by ``POST /invocations`` and ``POST /v1/audio/speech``. The plan runs before the response starts, so a bad
voice or speed gets a proper 4xx; after that, audio leaves segment by segment. If the model fails in the middle
of a streamed (non-SSE) answer the connection is aborted, so the client sees a truncated body rather than a
short file that looks complete; an SSE answer ends with an ``error`` event instead.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from kokoro_server.encoders import AudioEncoder, encode_whole, is_cheap, streaming_encoder
from kokoro_server.engines import EngineError
from kokoro_server.engines.speech_engine import SpeechEngine
from kokoro_server.errors import from_engine_error, internal_error
from kokoro_server.scheduled_speech import ScheduledSpeech, SpeechAudio, SpeechTimings
from kokoro_server.scheduler import Scheduler
from kokoro_server.word_timer import WordTimer
from relay_core import limits
from relay_core.agent.events import serialize_event
from relay_core.audio import b64encode, chunk_pcm
from relay_core.errors import LimitExceededError
from relay_core.speech_options import SpeechOptions
from relay_core.sse import encode_sse
from relay_core.tts.http_events import (
    HEADER_AUDIO_DURATION,
    HEADER_CHARACTERS,
    HEADER_INFERENCE_TIME_MS,
    HEADER_RTF,
    SSE_CHUNK_BYTES,
    SSE_MEDIA_TYPE,
    AudioFormat,
    SseAudioChunk,
    SseAudioStreamEnd,
    SseAudioStreamStart,
    SseFailed,
    openai_audio_delta,
    openai_audio_done,
    openai_error,
)
from relay_core.word_timings import WORD_TIMINGS_TYPE, WordTimings, serialize_word_timings

logger = logging.getLogger(__name__)

CLIENT_CLOSED_REQUEST = 499
"""Status recorded for a whole-file answer whose client went away before it was ready (nobody receives it)."""


@dataclass(frozen=True, slots=True)
class SpeechJob:
    """What to say and how to answer."""

    text: str
    options: SpeechOptions
    """How to speak it (voice None: the engine's default)."""
    format: AudioFormat
    stream: bool
    sse: bool
    request_id: str
    bitrate_kbps: int | None = None
    """mp3, opus or aac bitrate; None: the encoder's default."""
    openai_sse: bool = False
    """With ``sse``: OpenAI's SSE events (``speech.audio.delta``/``done``) instead of the relay's audio events."""
    first_fragment_words: int | None = None
    """The request's first-fragment choice (0 = no early cut); None: the server's default."""
    timings: bool = False
    """With ``sse`` (the relay's events): a ``word_timings`` event before each segment's audio. Ignored otherwise."""


async def read_body(request: Request, *, max_bytes: int) -> bytes:
    """The request body, refusing (``LimitExceededError``) more than ``max_bytes`` without reading it all."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise LimitExceededError(f"the request body is {declared} bytes; the limit is {max_bytes}: send less text")
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > max_bytes:
            raise LimitExceededError(f"the request body is over {max_bytes} bytes: send less text")
    return bytes(body)


def wants_sse(request: Request) -> bool:
    return SSE_MEDIA_TYPE in request.headers.get("accept", "").lower()


async def speech_response(engine: SpeechEngine, scheduler: Scheduler, job: SpeechJob, request: Request) -> Response:
    """Plan ``job`` and answer it in the way it asks for. ``request`` is watched for a client that goes away."""
    session = scheduler.open_session(label=job.request_id)
    timed = job.timings and job.sse and not job.openai_sse
    synthesis = ScheduledSpeech(
        engine,
        scheduler,
        session,
        text=job.text,
        options=job.options,
        first_fragment_words=job.first_fragment_words,
        timer=WordTimer(engine, request_id=job.request_id) if timed else None,
    )
    try:
        await synthesis.plan()
        if job.sse:
            body = _openai_sse_body(synthesis, job) if job.openai_sse else _sse_body(synthesis, job)
            return StreamingResponse(body, media_type=SSE_MEDIA_TYPE, headers=_no_cache())
        if job.stream:
            headers = {HEADER_CHARACTERS: str(len(job.text)), **_no_cache()}
            return StreamingResponse(_audio_body(synthesis, job), media_type=job.format.media_type, headers=headers)
        return await _whole(synthesis, job, request)
    except EngineError as exc:
        scheduler.cancel_session(session)
        return from_engine_error(exc).response()
    except Exception as exc:
        logger.exception("request %s failed", job.request_id)
        scheduler.cancel_session(session)
        return internal_error(exc).response()
    except BaseException:
        scheduler.cancel_session(session)
        raise


async def _encode(encoder: AudioEncoder, fmt: AudioFormat, pcm: bytes) -> bytes:
    return encoder.encode(pcm) if is_cheap(fmt) else await asyncio.to_thread(encoder.encode, pcm)


async def _finish(encoder: AudioEncoder, fmt: AudioFormat) -> bytes:
    return encoder.finish() if is_cheap(fmt) else await asyncio.to_thread(encoder.finish)


async def _encoded(synthesis: ScheduledSpeech, job: SpeechJob) -> AsyncIterator[bytes | WordTimings]:
    """The encoded stream, piece by piece as segments are rendered, with the request's word timings (if it asked
    for them) in their place before the audio they time."""
    fmt = job.format
    encoder = streaming_encoder(fmt, sample_rate=synthesis.engine.sample_rate, bitrate_kbps=job.bitrate_kbps)
    head = encoder.begin()
    if head:
        yield head
    async for event in synthesis.events():
        if isinstance(event, SpeechTimings):
            yield event.timings
        elif isinstance(event, SpeechAudio):
            data = await _encode(encoder, fmt, event.pcm)
            if data:
                yield data
    tail = await _finish(encoder, fmt)
    if tail:
        yield tail


async def _encoded_audio(synthesis: ScheduledSpeech, job: SpeechJob) -> AsyncIterator[bytes]:
    """Only the encoded audio of :func:`_encoded` (routes that carry no timings)."""
    async for data in _encoded(synthesis, job):
        if isinstance(data, bytes):
            yield data


async def _audio_body(synthesis: ScheduledSpeech, job: SpeechJob) -> AsyncIterator[bytes]:
    try:
        async for data in _encoded_audio(synthesis, job):
            yield data
    except EngineError as exc:
        logger.warning("aborting a streamed answer after %d segments: %s", synthesis.segments_done, exc)
        raise
    finally:
        synthesis.scheduler.cancel_session(synthesis.session)


def _event(event: SseAudioStreamStart | SseAudioChunk | SseAudioStreamEnd | SseFailed) -> bytes:
    return encode_sse(serialize_event(event), event=event.type)


async def _sse_body(synthesis: ScheduledSpeech, job: SpeechJob) -> AsyncIterator[bytes]:
    rid = job.request_id
    label = limits.PCM_FORMAT if job.format is AudioFormat.PCM else job.format.value
    yield _event(
        SseAudioStreamStart(
            request_id=rid, voice=synthesis.voice, format=label, sample_rate=synthesis.engine.sample_rate
        )
    )
    seq = 0
    try:
        async for data in _encoded(synthesis, job):
            if isinstance(data, WordTimings):
                yield encode_sse(serialize_word_timings(data), event=WORD_TIMINGS_TYPE)
                continue
            for piece in _sse_pieces(data, job.format):
                yield _event(SseAudioChunk(request_id=rid, seq=seq, data=b64encode(piece)))
                seq += 1
    except EngineError as exc:
        wire = from_engine_error(exc)
        yield _event(SseFailed(request_id=rid, code=wire.code, message=wire.message))
        return
    except Exception as exc:
        logger.exception("SSE answer %s failed", rid)
        wire = internal_error(exc)
        yield _event(SseFailed(request_id=rid, code=wire.code, message=wire.message))
        return
    finally:
        synthesis.scheduler.cancel_session(synthesis.session)
    yield _event(SseAudioStreamEnd(request_id=rid, total_chunks=seq, duration_s=round(synthesis.duration_s, 4)))


def _sse_pieces(data: bytes, fmt: AudioFormat) -> list[bytes]:
    """``data`` cut into SSE-sized pieces (PCM on sample boundaries)."""
    if fmt is AudioFormat.PCM:
        return list(chunk_pcm(data, SSE_CHUNK_BYTES))
    return [data[i : i + SSE_CHUNK_BYTES] for i in range(0, len(data), SSE_CHUNK_BYTES)]


async def _openai_sse_body(synthesis: ScheduledSpeech, job: SpeechJob) -> AsyncIterator[bytes]:
    """OpenAI's ``stream_format: "sse"``: ``speech.audio.delta`` events with base64 pieces of the file, then
    ``speech.audio.done``; a failure midway ends the stream with an ``error`` event."""
    try:
        async for data in _encoded_audio(synthesis, job):
            for piece in _sse_pieces(data, job.format):
                yield encode_sse(openai_audio_delta(b64encode(piece)))
    except EngineError as exc:
        wire = from_engine_error(exc)
        yield encode_sse(openai_error(code=wire.code, message=wire.message))
        return
    except Exception as exc:
        logger.exception("OpenAI SSE answer %s failed", job.request_id)
        wire = internal_error(exc)
        yield encode_sse(openai_error(code=wire.code, message=wire.message))
        return
    finally:
        synthesis.scheduler.cancel_session(synthesis.session)
    yield encode_sse(openai_audio_done(input_characters=len(job.text)))


async def _until_disconnected(request: Request) -> None:
    """Return when the client has gone away (the body has been read, so the next message is the disconnect)."""
    while (await request.receive())["type"] != "http.disconnect":
        continue


async def _collect(synthesis: ScheduledSpeech) -> bytes:
    return b"".join([piece async for piece in synthesis.pcm_segments()])


async def _whole(synthesis: ScheduledSpeech, job: SpeechJob, request: Request) -> Response:
    """Render everything, then answer one file. A client that disconnects meanwhile stops the rendering at once
    (its queued segment is dropped) instead of keeping a worker busy for nobody."""
    collect = asyncio.create_task(_collect(synthesis))
    gone = asyncio.create_task(_until_disconnected(request))
    try:
        await asyncio.wait({collect, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
        if not collect.done():
            collect.cancel()
            synthesis.scheduler.cancel_session(synthesis.session)
            logger.info("request %s: client disconnected; rendering stopped", job.request_id)
    if collect.cancelled():
        return Response(status_code=CLIENT_CLOSED_REQUEST)
    pcm = collect.result()
    elapsed = synthesis.elapsed_s
    rate, bitrate = synthesis.engine.sample_rate, job.bitrate_kbps
    if is_cheap(job.format):
        body = encode_whole(job.format, pcm, sample_rate=rate)
    else:
        body = await asyncio.to_thread(encode_whole, job.format, pcm, sample_rate=rate, bitrate_kbps=bitrate)
    duration = synthesis.duration_s
    headers = {
        HEADER_AUDIO_DURATION: f"{duration:.3f}",
        HEADER_INFERENCE_TIME_MS: f"{elapsed * 1000:.1f}",
        HEADER_RTF: f"{elapsed / duration:.4f}" if duration > 0 else "0",
        HEADER_CHARACTERS: str(len(job.text)),
    }
    return Response(body, media_type=job.format.media_type, headers=headers)


def _no_cache() -> dict[str, str]:
    return {"Cache-Control": "no-cache"}
