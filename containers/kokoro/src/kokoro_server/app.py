"""The Starlette application: a routes list and a lifespan, nothing else.

The lifespan creates the scheduler and loads the engine once (on a thread, so the port opens at once and
``/ping`` answers 503 until the model is ready); an injected engine (tests, benchmarks) is used as is. With
``KOKORO_METRICS_ENDPOINT`` set it also samples the open and queued sessions (the autoscaling signal,
kokoro_server.session_metrics). On shutdown queued inference is dropped and the worker threads stop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response

from kokoro_server import http_api, ws_session
from kokoro_server.admission import Admission, AdmissionMiddleware
from kokoro_server.config import ServerConfig
from kokoro_server.engines.speech_engine import SpeechEngine
from kokoro_server.errors import http_exception
from kokoro_server.scheduler import Scheduler
from kokoro_server.session_metrics import SessionMetrics, publish_sessions
from kokoro_server.state import ServerState
from relay_core.tts.http_events import HEADER_AUDIO_DURATION, HEADER_CHARACTERS, HEADER_INFERENCE_TIME_MS, HEADER_RTF

logger = logging.getLogger(__name__)


async def json_http_error(_request: Request, exc: Exception) -> Response:
    """404, 405 and Starlette's other HTTP errors as JSON ``{"error": {"code", "message"}}`` like every answer."""
    assert isinstance(exc, HTTPException)
    response = http_exception(exc.status_code, exc.detail).response()
    response.headers.update(exc.headers or {})
    return response


def cors(origins: tuple[str, ...]) -> list[Middleware]:
    """CORS for browser callers of the HTTP routes, only when origins are configured (off by default). Browsers
    may read the timing headers; WebSockets are not subject to CORS."""
    if not origins:
        return []
    return [
        Middleware(
            CORSMiddleware,
            allow_origins=list(origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Content-Type", "Accept", "Authorization"],
            expose_headers=[HEADER_AUDIO_DURATION, HEADER_CHARACTERS, HEADER_INFERENCE_TIME_MS, HEADER_RTF],
            max_age=600,
        )
    ]


def create_app(config: ServerConfig | None = None, *, engine: SpeechEngine | None = None) -> Starlette:
    """The TTS app. ``config`` defaults to :meth:`ServerConfig.from_env`; ``engine`` skips loading a model."""
    settings = config if config is not None else ServerConfig.from_env()
    state = ServerState(config=settings)
    admission = Admission(settings.session_limit)

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        scheduler = Scheduler(workers=settings.inference_workers, speech=settings.speech_policy)
        state.scheduler = scheduler
        loading: asyncio.Task[None] | None = None
        if engine is not None:
            state.engine = engine
            state.load_seconds = 0.0
        else:
            loading = asyncio.create_task(state.load(), name="kokoro-model-load")
        gauges: asyncio.Task[None] | None = None
        if settings.metrics_endpoint:
            metrics = SessionMetrics(settings.metrics_endpoint)
            gauges = asyncio.create_task(publish_sessions(metrics, admission), name="kokoro-session-gauges")
        try:
            yield
        finally:
            if gauges is not None:
                gauges.cancel()
                await asyncio.gather(gauges, return_exceptions=True)
            if loading is not None:
                await loading
            state.scheduler = None
            await asyncio.to_thread(scheduler.shutdown)

    app = Starlette(
        routes=[*http_api.routes, *ws_session.routes],
        lifespan=lifespan,
        middleware=[
            *cors(settings.cors_origins),
            Middleware(AdmissionMiddleware, counter=admission, ready=lambda: state.ready),
        ],
        exception_handlers={HTTPException: json_http_error},
    )
    app.state.server = state
    app.state.admission = admission
    return app
