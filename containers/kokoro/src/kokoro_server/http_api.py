"""The HTTP routes: ``GET /ping``, ``POST /invocations`` (docs/protocol.md §2) and the OpenAI-compatible surface.

``/invocations`` takes ``{"text","voice","speed","stream","format","request_id","bitrate_kbps"}``; ``stream``
defaults to true, ``format`` to ``wav`` (``pcm`` for SSE, chosen with ``Accept: text/event-stream``).
``/v1/audio/speech`` takes OpenAI's ``{"model","input","voice","response_format","speed","stream_format"}``:
``model`` is accepted and ignored (this server has one model), OpenAI voice names map onto the configured voices
(:mod:`kokoro_server.voice_catalog`); ``wav`` and ``flac`` answers are whole files whose headers carry the real
length, other formats stream. ``GET /v1/models`` lists the accepted model ids, ``GET /v1/audio/voices`` what each
voice is. Errors are JSON ``{"error": {"code","message"}}`` with the code's one HTTP status.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from kokoro_server import captioned
from kokoro_server.errors import from_protocol_error
from kokoro_server.speech_responses import SpeechJob, read_body, speech_response, wants_sse
from kokoro_server.state import NotReadyError, server_state
from kokoro_server.text_scripts import check_request_speakable
from kokoro_server.voice_catalog import describe, openai_voice_map, resolve_openai_voice
from relay_core.errors import ProtocolError
from relay_core.fields import decode_json_object
from relay_core.tts.http_events import (
    MAX_BODY_BYTES,
    OPENAI_MODELS,
    AudioFormat,
    OpenAiStreamFormat,
    parse_invocation,
    parse_openai_speech,
)
from relay_core.tts.session import random_request_id
from relay_core.word_timings import parse_timings_flag


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
        timings = parse_timings_flag(decode_json_object(body, max_bytes=MAX_BODY_BYTES, what="request body"))
        check_request_speakable(engine, parsed.text, parsed.options, state.config.lang, request_id=parsed.request_id)
    except NotReadyError as exc:
        return exc.wire.response()
    except ProtocolError as exc:
        return from_protocol_error(exc).response()
    job = SpeechJob(
        text=parsed.text,
        options=parsed.options,
        format=parsed.format,
        stream=parsed.stream,
        sse=sse,
        request_id=parsed.request_id or random_request_id(),
        timings=timings,
        bitrate_kbps=parsed.bitrate_kbps,
        first_fragment_words=parsed.first_fragment_words,
    )
    return await speech_response(engine, scheduler, job, request)


async def openai_speech(request: Request) -> Response:
    """OpenAI-compatible speech: the audio file (streamed, except wav and flac), or OpenAI's SSE events."""
    state = server_state(request)
    try:
        engine, scheduler = state.require()
        parsed = parse_openai_speech(await read_body(request, max_bytes=MAX_BODY_BYTES))
        voice = resolve_openai_voice(parsed.options.voice, engine.voices(), default_voice=engine.default_voice)
        options = parsed.options if voice is None else parsed.options.with_voice(voice)
        check_request_speakable(engine, parsed.input, options, state.config.lang, name="input")
    except NotReadyError as exc:
        return exc.wire.response()
    except ProtocolError as exc:
        return from_protocol_error(exc).response()
    sse = parsed.stream_format is OpenAiStreamFormat.SSE
    job = SpeechJob(
        text=parsed.input,
        options=options,
        format=parsed.format,
        stream=not parsed.format.whole_file_header,
        sse=sse,
        openai_sse=sse,
        request_id=random_request_id(),
        bitrate_kbps=parsed.bitrate_kbps,
    )
    return await speech_response(engine, scheduler, job, request)


async def openai_voices(request: Request) -> Response:
    """The voices this model has, what each is, and the OpenAI names they answer to (blends ``"a:0.7,b:0.3"`` of
    them are accepted too)."""
    state = server_state(request)
    try:
        engine, _ = state.require()
    except NotReadyError as exc:
        return exc.wire.response()
    names = engine.voices()
    official = engine.official_voices()
    return JSONResponse(
        {
            "voices": names,
            "default": engine.default_voice,
            "details": [
                describe(name, g2p_lang=state.config.lang, official=name in official).to_json() for name in names
            ],
            "openai_voices": openai_voice_map(names, default_voice=engine.default_voice),
        }
    )


async def openai_models(_request: Request) -> Response:
    """OpenAI's model list: the ids ``/v1/audio/speech`` accepts (all of them speak with the one Kokoro model)."""
    return JSONResponse(
        {
            "object": "list",
            "data": [
                {"id": model, "object": "model", "created": 0, "owned_by": "kokoro-relay"} for model in OPENAI_MODELS
            ],
        }
    )


routes = [
    Route("/ping", ping, methods=["GET"]),
    Route("/invocations", invocations, methods=["POST"]),
    Route("/v1/audio/speech", openai_speech, methods=["POST"]),
    Route("/v1/audio/voices", openai_voices, methods=["GET"]),
    Route("/v1/models", openai_models, methods=["GET"]),
    *captioned.routes,
]
