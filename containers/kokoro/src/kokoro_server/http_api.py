"""The HTTP routes: ``GET /ping``, ``POST /invocations`` (ARCHITECTURE §2) and the OpenAI-compatible surface.

``/invocations`` takes ``{"text","voice","speed","stream","format","request_id"}``; ``stream`` defaults to true,
``format`` to ``wav`` (``pcm`` for SSE, chosen with ``Accept: text/event-stream``). ``/v1/audio/speech`` takes
OpenAI's ``{"model","input","voice","response_format","speed"}`` and streams the file; ``model`` is accepted and
ignored (this server has one model). Errors are JSON ``{"error": {"code","message"}}`` with a 4xx/5xx status.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from kokoro_server.errors import from_protocol_error
from kokoro_server.speak import SpeechJob, read_body, speech_response, wants_sse
from kokoro_server.state import NotReadyError, server_state
from relay_core import limits
from relay_core.errors import InvalidFieldError, ProtocolError
from relay_core.fields import decode_json_object, get_number, get_str
from relay_core.http_events import MAX_BODY_BYTES, AudioFormat, check_text, parse_audio_format, parse_invocation
from relay_core.tts_session import random_request_id

OPENAI_DEFAULT_FORMAT = AudioFormat.MP3
"""OpenAI's default ``response_format``."""


async def ping(request: Request) -> Response:
    """200 once the model is loaded; 503 (with the reason) before, or if loading failed."""
    state = server_state(request)
    try:
        engine, _ = state.require()
    except NotReadyError as exc:
        status = "failed" if state.load_error is not None else "loading"
        return JSONResponse(
            {"status": status, "error": {"code": exc.wire.code, "message": exc.wire.message}}, status_code=503
        )
    return JSONResponse({"status": "healthy", "engine": engine.name, "default_voice": engine.default_voice})


async def invocations(request: Request) -> Response:
    """Speak ``text``: streamed audio (default), one file with timing headers, or SSE events."""
    state = server_state(request)
    try:
        engine, scheduler = state.require()
        sse = wants_sse(request)
        body = await read_body(request, max_bytes=MAX_BODY_BYTES)
        parsed = parse_invocation(body, default_format=AudioFormat.PCM if sse else AudioFormat.WAV)
    except NotReadyError as exc:
        return exc.wire.response()
    except ProtocolError as exc:
        return from_protocol_error(exc).response()
    job = SpeechJob(
        text=parsed.text,
        voice=parsed.voice,
        speed=parsed.speed,
        format=parsed.format,
        stream=parsed.stream,
        sse=sse,
        request_id=parsed.request_id or random_request_id(),
    )
    return await speech_response(engine, scheduler, job, request)


def parse_openai_speech(body: bytes) -> SpeechJob:
    """Check an OpenAI ``/v1/audio/speech`` body. Raises only ``ProtocolError`` subclasses."""
    obj = decode_json_object(body, max_bytes=MAX_BODY_BYTES, what="request body")
    text = get_str(obj, "input", required=True)
    assert text is not None  # required=True guarantees it
    check_text(text)
    get_str(obj, "model", max_chars=200)
    voice = get_str(obj, "voice", max_chars=limits.MAX_VOICE_SPEC_CHARS)
    speed = get_number(obj, "speed", default=limits.DEFAULT_SPEED, minimum=limits.MIN_SPEED, maximum=limits.MAX_SPEED)
    try:
        fmt = parse_audio_format(get_str(obj, "response_format"), default=OPENAI_DEFAULT_FORMAT)
    except InvalidFieldError as exc:
        raise InvalidFieldError(exc.message.replace("'format'", "'response_format'")) from exc
    return SpeechJob(
        text=text, voice=voice or None, speed=speed, format=fmt, stream=True, sse=False, request_id=random_request_id()
    )


async def openai_speech(request: Request) -> Response:
    """OpenAI-compatible speech: the audio file, streamed as it is produced."""
    state = server_state(request)
    try:
        engine, scheduler = state.require()
        job = parse_openai_speech(await read_body(request, max_bytes=MAX_BODY_BYTES))
    except NotReadyError as exc:
        return exc.wire.response()
    except ProtocolError as exc:
        return from_protocol_error(exc).response()
    return await speech_response(engine, scheduler, job, request)


async def openai_voices(request: Request) -> Response:
    """The voices this model has (blends ``"a:0.7,b:0.3"`` of them are accepted too)."""
    state = server_state(request)
    try:
        engine, _ = state.require()
    except NotReadyError as exc:
        return exc.wire.response()
    return JSONResponse({"voices": engine.voices(), "default": engine.default_voice})


routes = [
    Route("/ping", ping, methods=["GET"]),
    Route("/invocations", invocations, methods=["POST"]),
    Route("/v1/audio/speech", openai_speech, methods=["POST"]),
    Route("/v1/audio/voices", openai_voices, methods=["GET"]),
]
