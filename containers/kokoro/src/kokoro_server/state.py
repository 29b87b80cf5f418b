"""What the running app holds: the loaded engine and the scheduler, created once in the lifespan.

The model loads on a background thread started by the lifespan, so the port is open at once and ``GET /ping``
answers 503 until the engine is ready (and 503 with the reason if loading failed). There is no lazy global:
routes reach the engine only through this object, stored on ``app.state.server``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import dataclass, field

from starlette.requests import HTTPConnection

from kokoro_server.config import ServerConfig
from kokoro_server.engines import EngineError, load_engine
from kokoro_server.engines.speech_engine import SpeechEngine
from kokoro_server.errors import WireError, not_ready
from kokoro_server.scheduler import Scheduler

logger = logging.getLogger(__name__)


class NotReadyError(RuntimeError):
    """The model is not loaded (yet, or loading failed)."""

    def __init__(self, wire: WireError) -> None:
        super().__init__(wire.message)
        self.wire = wire


@dataclass
class ServerState:
    """The engine, once loaded, and the scheduler that runs all inference."""

    config: ServerConfig
    engine: SpeechEngine | None = None
    scheduler: Scheduler | None = None
    load_error: str | None = None
    load_seconds: float | None = None
    started_at: float = field(default_factory=time.perf_counter)
    settled: threading.Event = field(default_factory=threading.Event)
    """Set once loading has ended, loaded or failed (for anything that must wait for it from another thread)."""

    @property
    def ready(self) -> bool:
        return self.engine is not None and self.scheduler is not None

    def require(self) -> tuple[SpeechEngine, Scheduler]:
        """The engine and scheduler; raises :class:`NotReadyError` (a 503) while they are not there."""
        if self.engine is not None and self.scheduler is not None:
            return self.engine, self.scheduler
        if self.load_error is not None:
            raise NotReadyError(not_ready(f"the model failed to load: {self.load_error}"))
        raise NotReadyError(not_ready("the model is still loading: retry when GET /ping answers 200"))

    async def load(self) -> None:
        """Load the configured engine on a thread; records a failure instead of raising, for /ping to report."""
        started = time.perf_counter()
        try:
            engine = await asyncio.to_thread(load_engine, self.config.engine_config())
        except EngineError as exc:
            self.load_error = str(exc)
            logger.error("model load failed: %s", exc)
        except Exception as exc:
            self.load_error = f"{type(exc).__name__}: {exc}"
            logger.exception("model load failed unexpectedly")
        else:
            self.load_seconds = time.perf_counter() - started
            self.engine = engine
            logger.info(
                "engine %s loaded in %.2f s; default voice %s", engine.name, self.load_seconds, engine.default_voice
            )
        self.settled.set()


def server_state(connection: HTTPConnection) -> ServerState:
    """The app's state, from any request or WebSocket."""
    state: ServerState = connection.app.state.server
    return state
