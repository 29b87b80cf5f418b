"""Admission: at most :attr:`Admission.limit` sessions are served at once; the rest wait, first come first served.

:class:`Admission` counts the WebSocket sessions served (``KOKORO_MAX_SESSIONS``) and keeps the queue of the ones
that wait for a slot. A session that finds every slot taken joins the queue (:meth:`Admission.join`) and is told so
in-band by its session (``queued``, :mod:`relay_core.tts.session`); when a served session ends, its slot passes
straight to the session at the head of the queue, so a later session can never overtake one that waited longer.
A wait is bounded (``KOKORO_QUEUE_WAIT_S``): past it the session ends with ``at_capacity``. See docs/capacity.md.

:class:`AdmissionMiddleware` answers ``GET /ping`` with ``"status": "busy"`` (and the open and queued sessions)
while the instance is full, still with HTTP 200: SageMaker treats a non-200 ping as an unhealthy container (it
stops routing to it and may replace the instance), which is wrong for a transient, healthy state.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from relay_core.tts.messages import QUEUED_REPEAT_S

PING_PATH = "/ping"


@dataclass(frozen=True, slots=True)
class AdmissionStats:
    """A snapshot: sessions served now, sessions waiting, the limit, and how many gave up waiting at the bound."""

    active: int
    queued: int
    limit: int
    refused: int

    @property
    def busy(self) -> bool:
        return self.active >= self.limit


@dataclass(eq=False, slots=True)
class Ticket:
    """A session's place in the admission queue; its future is resolved when a slot is handed to it."""

    position: int
    """Its place when it joined (1: next; 0: it got a slot at once)."""
    slot: asyncio.Future[None] = field(repr=False)

    @property
    def admitted(self) -> bool:
        """A slot was handed to it (at once, or when one freed)."""
        return self.slot.done() and not self.slot.cancelled()


class Admission:
    """Slots against a limit, and a first-come-first-served queue for the sessions that find them all taken.

    Slots are taken and handed over on the server's event loop; :meth:`stats` may be read from any thread."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"admission limit {limit}: admit at least one session")
        self.limit = limit
        self._active = 0
        self._refused = 0
        self._waiting: deque[Ticket] = deque()
        self._lock = threading.Lock()

    def join(self) -> Ticket:
        """A slot at once if one is free and nobody waits for it (:attr:`Ticket.admitted`), else a place at the
        queue's tail (then :meth:`wait_turn`). Whoever gets a slot calls :meth:`leave` once the session ends. Call
        on the event loop."""
        slot: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with self._lock:
            if self._active < self.limit and not self._waiting:
                self._active += 1
                slot.set_result(None)
                return Ticket(position=0, slot=slot)
            ticket = Ticket(position=len(self._waiting) + 1, slot=slot)
            self._waiting.append(ticket)
            return ticket

    async def wait_turn(
        self,
        ticket: Ticket,
        timeout_s: float,
        *,
        still_waiting: Callable[[int], Awaitable[None]] | None = None,
        every_s: float = QUEUED_REPEAT_S,
    ) -> bool:
        """Wait until a slot is handed to ``ticket`` (True: the caller holds it and must :meth:`leave`) or
        ``timeout_s`` has passed (False: the ticket left the queue), calling ``still_waiting(place now)`` every
        ``every_s`` meanwhile. Cancelled, the ticket leaves the queue and any slot handed to it meanwhile is
        passed on."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout_s, 0.0)
        try:
            while True:
                left = deadline - loop.time()
                if left <= 0:
                    return self._withdraw(ticket, gave_up=True)
                try:
                    await asyncio.wait_for(asyncio.shield(ticket.slot), timeout=min(left, every_s))
                except TimeoutError:
                    if still_waiting is not None and not ticket.admitted and loop.time() < deadline:
                        await still_waiting(self.position(ticket))
                    continue
                return True
        except asyncio.CancelledError:
            if self._withdraw(ticket, gave_up=False):
                self.leave()
            raise

    def position(self, ticket: Ticket) -> int:
        """The ticket's place in the queue now (1: next); 0 once it left the queue."""
        with self._lock:
            try:
                return self._waiting.index(ticket) + 1
            except ValueError:
                return 0

    def leave(self) -> None:
        """A session holding a slot has ended: the slot goes to the head of the queue, or is freed."""
        with self._lock:
            if self._active == 0:
                raise RuntimeError("Admission.leave() without a slot taken: a session was counted twice")
            while self._waiting:
                head = self._waiting.popleft()
                if not head.slot.done():
                    head.slot.set_result(None)  # the slot changes hands: the count stays
                    return
            self._active -= 1

    def stats(self) -> AdmissionStats:
        with self._lock:
            return AdmissionStats(
                active=self._active, queued=len(self._waiting), limit=self.limit, refused=self._refused
            )

    def _withdraw(self, ticket: Ticket, *, gave_up: bool) -> bool:
        """Take ``ticket`` out of the queue; True when a slot had already been handed to it (it holds the slot)."""
        with self._lock:
            if ticket.admitted:
                return True
            if ticket in self._waiting:
                self._waiting.remove(ticket)
            ticket.slot.cancel()
            self._refused += gave_up
            return False


def admission(connection: HTTPConnection) -> Admission:
    """The app's admission counter (made by :func:`kokoro_server.app.create_app`)."""
    counter: Admission = connection.app.state.admission
    return counter


class AdmissionMiddleware:
    """ASGI middleware answering ``GET /ping`` with ``busy`` while the instance is full (the route's own answer
    otherwise: 200 healthy, or 503 while loading)."""

    def __init__(self, app: ASGIApp, *, counter: Admission, ready: Callable[[], bool]) -> None:
        self.app = app
        self.counter = counter
        self.ready = ready

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == PING_PATH and scope["method"] == "GET" and self.ready():
            stats = self.counter.stats()
            if stats.busy:
                body = {"status": "busy", "sessions": stats.active, "queued": stats.queued, "max_sessions": stats.limit}
                await JSONResponse(body, status_code=200)(scope, receive, send)
                return
        await self.app(scope, receive, send)
