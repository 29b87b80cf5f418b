"""Admission: an instance that is full says so instead of queueing without bound.

At most :attr:`Admission.limit` WebSocket sessions are served at once (:class:`AdmissionMiddleware`, installed
by :func:`kokoro_server.app.create_app` around every route; ``KOKORO_MAX_SESSIONS``). A new session beyond it is
closed with 1013 (try again later) right after the handshake, so the caller (the agent's retry, or a client) can
go elsewhere or retry; ``GET /ping`` reports ``"status": "busy"`` while the instance is full, still with HTTP
200: SageMaker treats a non-200 ping as an unhealthy container (it stops routing to it and may replace the
instance), which is wrong for a transient, healthy state. See docs/server.md.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from relay_core.close_codes import TRY_AGAIN_LATER
from relay_core.tts.messages import SESSION_PATH

PING_PATH = "/ping"


@dataclass(frozen=True, slots=True)
class AdmissionStats:
    """A snapshot: sessions served now, the limit, and how many were refused so far."""

    active: int
    limit: int
    refused: int

    @property
    def busy(self) -> bool:
        return self.active >= self.limit


class Admission:
    """A thread-safe count of admitted sessions against a limit."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"admission limit {limit}: admit at least one session")
        self.limit = limit
        self._active = 0
        self._refused = 0
        self._lock = threading.Lock()

    def try_enter(self) -> bool:
        """Admit one more session if there is room (then :meth:`leave` once it ends); False when full."""
        with self._lock:
            if self._active >= self.limit:
                self._refused += 1
                return False
            self._active += 1
            return True

    def leave(self) -> None:
        """An admitted session has ended."""
        with self._lock:
            if self._active == 0:
                raise RuntimeError("Admission.leave() without a matching try_enter(): a session was counted twice")
            self._active -= 1

    def stats(self) -> AdmissionStats:
        with self._lock:
            return AdmissionStats(active=self._active, limit=self.limit, refused=self._refused)

    def refusal_reason(self) -> str:
        """The close reason sent with 1013 (short: a close reason is at most 123 bytes)."""
        return f"server busy: {self.limit} sessions in use; retry later or on another instance"


def admission(connection: HTTPConnection) -> Admission:
    """The app's admission counter (made by :func:`kokoro_server.app.create_app`)."""
    counter: Admission = connection.app.state.admission
    return counter


class AdmissionMiddleware:
    """ASGI middleware applying :class:`Admission` to the TTS session path, and answering ``GET /ping`` with
    ``busy`` while the instance is full (the route's own answer otherwise: 200 healthy, or 503 while loading)."""

    def __init__(self, app: ASGIApp, *, counter: Admission, ready: Callable[[], bool]) -> None:
        self.app = app
        self.counter = counter
        self.ready = ready

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" and scope["path"] == SESSION_PATH:
            await self._session(scope, receive, send)
            return
        if scope["type"] == "http" and scope["path"] == PING_PATH and scope["method"] == "GET" and self.ready():
            stats = self.counter.stats()
            if stats.busy:
                body = {"status": "busy", "sessions": stats.active, "max_sessions": stats.limit}
                await JSONResponse(body, status_code=200)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    async def _session(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.ready():  # the route itself closes with 1013 and the loading reason
            await self.app(scope, receive, send)
            return
        if not self.counter.try_enter():
            websocket = WebSocket(scope, receive, send)
            await websocket.accept()
            await websocket.close(TRY_AGAIN_LATER, reason=self.counter.refusal_reason())
            return
        try:
            await self.app(scope, receive, send)
        finally:
            self.counter.leave()
