"""``POST /dev/captioned_speech``: the whole audio file and the timing of every word in it, as one JSON answer.

Like Kokoro-FastAPI's captioned-speech route, for callers that want captions without reading a stream. The body is
the ``/v1/audio/speech`` body (``input``, ``voice``, ``speed``, ``response_format`` — default ``wav`` here —
and ``model``, accepted and ignored); the answer is :class:`relay_core.word_timings.CaptionedSpeech`:
``{"request_id","format","sample_rate","duration_s","audio": base64 file,"words": [{"word","start_s","end_s"}]}``,
the times on the file's timeline (after the silence policy). Errors are the usual JSON
``{"error": {"code","message"}}`` with a 4xx/5xx status.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from kokoro_server.encoders import encode_whole, is_cheap
from kokoro_server.engines import EngineError
from kokoro_server.engines.speech_engine import SpeechEngine
from kokoro_server.errors import from_engine_error, from_protocol_error, internal_error
from kokoro_server.scheduled_speech import ScheduledSpeech, SpeechAudio, SpeechTimings
from kokoro_server.scheduler import Scheduler
from kokoro_server.speech_responses import read_body
from kokoro_server.state import NotReadyError, server_state
from kokoro_server.word_timer import WordTimer
from relay_core.audio import b64encode
from relay_core.errors import ProtocolError
from relay_core.speech_options import DEFAULT_SPEECH, SpeechOptions
from relay_core.tts.http_events import MAX_BODY_BYTES, AudioFormat, parse_openai_speech
from relay_core.tts.session import random_request_id
from relay_core.word_timings import CAPTIONED_SPEECH_PATH, CaptionedSpeech, WordTiming, apply_word_timings

logger = logging.getLogger(__name__)

DEFAULT_FORMAT = AudioFormat.WAV


@dataclass(frozen=True, slots=True)
class TimedSpeech:
    """A whole request's PCM (s16le) and the timings of its words on that PCM's timeline."""

    pcm: bytes
    words: tuple[WordTiming, ...]
    duration_s: float


async def speak_timed(
    engine: SpeechEngine,
    scheduler: Scheduler,
    *,
    text: str,
    options: SpeechOptions = DEFAULT_SPEECH,
    request_id: str,
) -> TimedSpeech:
    """Speak ``text`` as one request through ``scheduler`` (the server's policies, like any route) and collect its
    word timings. The scheduler session is closed however this ends; synthesis errors propagate."""
    session = scheduler.open_session(label=request_id)
    timer = WordTimer(engine, request_id=request_id)
    synthesis = ScheduledSpeech(engine, scheduler, session, text=text, options=options, timer=timer)
    pieces: list[bytes] = []
    words: list[WordTiming] = []
    try:
        async for event in synthesis.events():
            if isinstance(event, SpeechAudio):
                pieces.append(event.pcm)
            elif isinstance(event, SpeechTimings):
                apply_word_timings(words, event.timings)
    finally:
        scheduler.cancel_session(session)
    return TimedSpeech(b"".join(pieces), tuple(words), synthesis.duration_s)


async def captioned_speech(request: Request) -> Response:
    """Speak ``input``; answer the whole file (base64) with its word timings."""
    state = server_state(request)
    try:
        engine, scheduler = state.require()
        body = await read_body(request, max_bytes=MAX_BODY_BYTES)
        speech = parse_openai_speech(body, default_format=DEFAULT_FORMAT)
    except NotReadyError as exc:
        return exc.wire.response()
    except ProtocolError as exc:
        return from_protocol_error(exc).response()
    request_id = random_request_id()
    fmt = speech.format
    try:
        spoken = await speak_timed(
            engine,
            scheduler,
            text=speech.input,
            options=speech.options,
            request_id=request_id,
        )
    except EngineError as exc:
        return from_engine_error(exc).response()
    except Exception as exc:
        logger.exception("captioned request %s failed", request_id)
        return internal_error(exc).response()
    pcm = spoken.pcm
    if is_cheap(fmt):
        audio = encode_whole(fmt, pcm, sample_rate=engine.sample_rate)
    else:
        audio = await asyncio.to_thread(encode_whole, fmt, pcm, sample_rate=engine.sample_rate)
    answer = CaptionedSpeech(
        request_id=request_id,
        format=fmt.value,
        sample_rate=engine.sample_rate,
        duration_s=round(spoken.duration_s, 4),
        audio=b64encode(audio),
        words=spoken.words,
    )
    return JSONResponse(answer.to_json())


routes = [Route(CAPTIONED_SPEECH_PATH, captioned_speech, methods=["POST"])]
