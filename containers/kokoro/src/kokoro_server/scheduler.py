"""The inference scheduler: a few worker threads shared by every session, fair across sessions.

Inference never runs on the event loop. Every piece of blocking model work is a *job*: one segment's render, or
one request's plan (G2P and splitting). The policy (documented in docs/server.md):

- **One job per session at a time.** A session (a WebSocket session, or one HTTP request) submits its next job only
  when the previous one has finished; :meth:`Scheduler.submit` refuses a second one. So a session's audio comes out
  in order, and no session can flood the queue.
- **Sessions waiting for their first sound go first.** A render job of a session that has heard nothing yet
  (:attr:`SchedulerSession.heard` is false) runs before every other job, shortest first (by its ``cost``, the
  segment's token count), then first come first served. A session waiting for its first sound therefore never
  waits behind other sessions' later segments or later requests, only behind the job already running and
  shorter first fragments.
- **Then by (segment index within its request, arrival order).** A request's first segment runs before any
  other session's second or later segment, so a new request's time to first audio does not grow with the length
  of texts other sessions are speaking. Among equal indices, first come, first served. Under a constant stream of
  new sessions later work waits (it is not aged); admission (:mod:`kokoro_server.admission`) bounds that stream.
- **A streamed segment is one job per decoder chunk** (:mod:`kokoro_server.scheduled_speech`: only segments a
  listener waits on stream), all under the segment's index: while its session has heard nothing, its jobs have
  the first-sound rank (the first chunk is the first sound); once a chunk is heard the later ones take turns with
  other sessions' jobs by the rule above, so chunks of different sessions interleave.
- **Plans run on their own thread**, first come first served, so G2P of a new request overlaps the render in
  progress instead of waiting for it.
- **Dead work is dropped.** :meth:`Scheduler.cancel_session` removes a session's queued job at once, and a job whose
  future was cancelled (the awaiting coroutine was cancelled, e.g. on client disconnect) is never started. A job
  that is already running finishes its one segment and its result is discarded.

- **Shutdown resolves everything.** :meth:`Scheduler.shutdown` cancels every queued render *and plan* job (their
  awaiters get ``CancelledError``), and no job is accepted once it has begun.

Futures are :class:`concurrent.futures.Future`; :meth:`Scheduler.run` and :meth:`Scheduler.plan` await them from
asyncio, and cancelling that await cancels the job.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kokoro_server.policy import SpeechPolicy

T = TypeVar("T")

logger = logging.getLogger(__name__)


class SchedulerError(RuntimeError):
    """The scheduler was used against its rules (a programming error); the message says which rule."""


@dataclass(eq=False)
class SchedulerSession:
    """One submitter's handle: a WebSocket session or a single HTTP request."""

    label: str
    job: _Job[Any] | None = field(default=None, repr=False)
    """The session's job that is queued or running, if any."""
    closed: bool = False
    last_spoken: str | None = field(default=None, repr=False)
    """The text of the session's latest request that produced audio (None: nothing heard yet). Set by
    :class:`kokoro_server.scheduled_speech.ScheduledSpeech`; decides priority, the first-fragment default and the
    pause."""

    @property
    def heard(self) -> bool:
        """Whether any audio of this session has been rendered (its listener is no longer waiting)."""
        return self.last_spoken is not None


FIRST_SOUND = 0
"""Rank of a job whose session has heard nothing yet."""
LATER = 1
"""Rank of every other job."""


@dataclass(order=True)
class _Job[R]:
    rank: int
    cost: int
    index: int
    seq: int
    fn: Callable[[], R] = field(compare=False)
    future: Future[R] = field(compare=False)
    session: SchedulerSession = field(compare=False)


@dataclass(frozen=True, slots=True)
class SchedulerStats:
    """A snapshot of the scheduler's counters."""

    queued: int
    """Render jobs waiting for a worker (cancelled ones excluded)."""
    running: int
    """Jobs (renders and plans) being executed now."""
    completed: int
    """Jobs that ran to the end (successfully or with an error)."""
    dropped: int
    """Jobs removed before they started (cancelled or their session closed)."""


class Scheduler:
    """A priority queue of render jobs served by ``workers`` threads, plus one planning thread."""

    def __init__(self, *, workers: int = 1, name: str = "kokoro", speech: SpeechPolicy | None = None) -> None:
        if workers < 1:
            raise SchedulerError(f"workers={workers}: a scheduler needs at least one worker thread")
        self.workers = workers
        self.speech = speech if speech is not None else SpeechPolicy()
        """The speech policy every synthesis on this scheduler follows (silence shaping, first fragment)."""
        self._plans: dict[int, _Job[Any]] = {}
        """Plan jobs not yet finished, by seq (cancelled by shutdown)."""
        self._heap: list[_Job[Any]] = []
        self._cond = threading.Condition()
        self._seq = itertools.count()
        self._stopping = False
        self._running = 0
        self._completed = 0
        self._dropped = 0
        self._threads = [
            threading.Thread(target=self._work, name=f"{name}-render-{i}", daemon=True) for i in range(workers)
        ]
        self._planner = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{name}-plan")
        for thread in self._threads:
            thread.start()

    # --- sessions ------------------------------------------------------------------------------------------

    def open_session(self, label: str = "") -> SchedulerSession:
        """A new submitter. Close it with :meth:`cancel_session` when it ends."""
        return SchedulerSession(label=label)

    def cancel_session(self, session: SchedulerSession, *, close: bool = True) -> None:
        """Drop the session's queued job now (a running one finishes; its result is discarded by its awaiter).
        With ``close`` the session accepts no more jobs."""
        with self._cond:
            session.closed = session.closed or close
            job = session.job
            if job is None:
                return
            if job.future.cancel():
                self._remove(job)
            session.job = None if job.future.cancelled() else job

    # --- submission ----------------------------------------------------------------------------------------

    def submit(self, session: SchedulerSession, index: int, fn: Callable[[], T], *, cost: int = 0) -> Future[T]:
        """Queue ``fn`` (one segment's render) as segment ``index`` of the session's current request; ``cost``
        (the segment's tokens) orders the jobs of sessions that have heard nothing yet, shortest first."""
        future: Future[T] = Future()
        with self._cond:
            self._admit(session)
            if self._stopping:
                raise SchedulerError("the scheduler is shut down: no more jobs are accepted")
            rank, cost = (LATER, 0) if session.heard else (FIRST_SOUND, cost)
            job = _Job(rank=rank, cost=cost, index=index, seq=next(self._seq), fn=fn, future=future, session=session)
            session.job = job
            heapq.heappush(self._heap, job)
            self._cond.notify()
        future.add_done_callback(lambda _f: self._release(session, job))
        return future

    def submit_plan(self, session: SchedulerSession, fn: Callable[[], T]) -> Future[T]:
        """Run ``fn`` (a request's plan) on the planning thread, first come first served."""
        with self._cond:
            self._admit(session)
            if self._stopping:
                raise SchedulerError("the scheduler is shut down: no more jobs are accepted")
            future: Future[T] = Future()
            job = _Job(rank=FIRST_SOUND, cost=0, index=-1, seq=next(self._seq), fn=fn, future=future, session=session)
            session.job = job
            self._plans[job.seq] = job
            # submitted under the lock, so shutdown() (which takes it first) sees every plan it must cancel
            self._planner.submit(self._execute, job)
        future.add_done_callback(lambda _f: self._release(session, job))
        return future

    async def run(self, session: SchedulerSession, index: int, fn: Callable[[], T], *, cost: int = 0) -> T:
        """Await a render job; cancelling the await drops the job if it has not started."""
        return await asyncio.wrap_future(self.submit(session, index, fn, cost=cost))

    async def plan(self, session: SchedulerSession, fn: Callable[[], T]) -> T:
        """Await a plan job; cancelling the await drops the job if it has not started."""
        return await asyncio.wrap_future(self.submit_plan(session, fn))

    def _admit(self, session: SchedulerSession) -> None:
        if session.closed:
            raise SchedulerError(f"session {session.label!r} is closed: open a new one")
        if session.job is not None and not session.job.future.done():
            raise SchedulerError(
                f"session {session.label!r} already has a job in flight: await it before submitting the next"
            )

    def _release(self, session: SchedulerSession, job: _Job[Any]) -> None:
        with self._cond:
            self._plans.pop(job.seq, None)
            if job.future.cancelled():
                self._remove(job)
            if session.job is job:
                session.job = None

    def _remove(self, job: _Job[Any]) -> None:
        """Take a cancelled job out of the queue (caller holds the lock)."""
        try:
            self._heap.remove(job)
        except ValueError:
            return
        heapq.heapify(self._heap)
        self._dropped += 1

    # --- workers -------------------------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._heap and not self._stopping:
                    self._cond.wait()
                if not self._heap:
                    return
                job = heapq.heappop(self._heap)
            self._execute(job)

    def _execute(self, job: _Job[Any]) -> None:
        if not job.future.set_running_or_notify_cancel():
            with self._cond:
                self._dropped += 1
            return
        with self._cond:
            self._running += 1
        try:
            result = job.fn()
        except BaseException as exc:  # noqa: BLE001 - delivered to the awaiting caller through the future
            job.future.set_exception(exc)
        else:
            job.future.set_result(result)
        finally:
            with self._cond:
                self._running -= 1
                self._completed += 1
                self._cond.notify_all()

    # --- observation and shutdown --------------------------------------------------------------------------

    def stats(self) -> SchedulerStats:
        with self._cond:
            queued = sum(1 for job in self._heap if not job.future.cancelled())
            return SchedulerStats(
                queued=queued, running=self._running, completed=self._completed, dropped=self._dropped
            )

    def wait_idle(self, timeout: float) -> bool:
        """Block until no job is queued or running; False if ``timeout`` seconds pass first."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._heap and self._running == 0, timeout=timeout)

    def shutdown(self) -> None:
        """Cancel queued jobs, let running ones finish, and stop the threads."""
        with self._cond:
            self._stopping = True
            pending, self._heap = self._heap, []
            pending.extend(self._plans.values())
            self._cond.notify_all()
        for job in pending:
            if job.future.cancel():
                with self._cond:
                    self._dropped += 1
        self._planner.shutdown(wait=True, cancel_futures=True)
        for thread in self._threads:
            thread.join()
