"""The scheduler without sockets: fair order, one job per session, cancellation, errors, shutdown."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from functools import partial

import pytest

from kokoro_server.scheduler import Scheduler, SchedulerError


@pytest.fixture
def scheduler() -> Iterator[Scheduler]:
    s = Scheduler(workers=1, name="test")
    yield s
    s.shutdown()


def block_worker(scheduler: Scheduler) -> tuple[threading.Event, threading.Event]:
    """Occupy the single worker until the returned ``release`` event is set; ``running`` is set once it runs."""
    running, release = threading.Event(), threading.Event()

    def hold() -> None:
        running.set()
        assert release.wait(30)

    scheduler.submit(scheduler.open_session("blocker"), 0, hold)
    assert running.wait(30)
    return running, release


def test_first_segments_run_before_later_ones_then_first_come_first_served(scheduler: Scheduler) -> None:
    _, release = block_worker(scheduler)
    order: list[str] = []
    jobs = [("a", 2), ("b", 0), ("c", 1), ("d", 0), ("e", 2), ("f", 1)]
    futures = [
        scheduler.submit(scheduler.open_session(name), index, partial(order.append, name)) for name, index in jobs
    ]
    release.set()
    for future in futures:
        future.result(timeout=30)
    assert order == ["b", "d", "c", "f", "a", "e"]


def test_sessions_waiting_for_their_first_sound_go_first_shortest_first(scheduler: Scheduler) -> None:
    _, release = block_worker(scheduler)
    order: list[str] = []
    heard = [scheduler.open_session(name) for name in ("h0", "h1")]
    for session in heard:
        session.last_spoken = "Something already played."
    # heard sessions' first segments (even of a new request), then waiting sessions' first fragments
    futures = [
        scheduler.submit(heard[0], 0, partial(order.append, "h0"), cost=5),
        scheduler.submit(scheduler.open_session("long"), 0, partial(order.append, "long"), cost=90),
        scheduler.submit(heard[1], 0, partial(order.append, "h1"), cost=1),
        scheduler.submit(scheduler.open_session("short"), 0, partial(order.append, "short"), cost=12),
        scheduler.submit(scheduler.open_session("later"), 1, partial(order.append, "later"), cost=3),
        scheduler.submit(scheduler.open_session("tie"), 0, partial(order.append, "tie"), cost=12),
    ]
    release.set()
    for future in futures:
        future.result(timeout=30)
    # waiting sessions by cost (ties first come first served), whatever their segment index; then heard ones by
    # (index, arrival), their cost ignored
    assert order == ["later", "short", "tie", "long", "h0", "h1"]


def test_a_session_has_at_most_one_job_in_flight(scheduler: Scheduler) -> None:
    _, release = block_worker(scheduler)
    session = scheduler.open_session("s")
    first = scheduler.submit(session, 0, lambda: 1)
    with pytest.raises(SchedulerError, match="already has a job in flight"):
        scheduler.submit(session, 1, lambda: 2)
    with pytest.raises(SchedulerError, match="already has a job in flight"):
        scheduler.submit_plan(session, lambda: 3)
    release.set()
    assert first.result(timeout=30) == 1
    assert scheduler.submit(session, 1, lambda: 2).result(timeout=30) == 2


def test_cancel_session_drops_its_queued_job_at_once(scheduler: Scheduler) -> None:
    _, release = block_worker(scheduler)
    ran: list[str] = []
    dead = scheduler.open_session("dead")
    live = scheduler.open_session("live")
    dropped = scheduler.submit(dead, 0, lambda: ran.append("dead"))
    kept = scheduler.submit(live, 0, lambda: ran.append("live"))
    assert scheduler.stats().queued == 2
    scheduler.cancel_session(dead)
    assert dropped.cancelled()
    assert scheduler.stats().queued == 1
    assert scheduler.stats().dropped == 1
    with pytest.raises(SchedulerError, match="closed"):
        scheduler.submit(dead, 1, lambda: None)
    release.set()
    kept.result(timeout=30)
    assert scheduler.wait_idle(30)
    assert ran == ["live"]


def test_errors_reach_the_caller_and_the_worker_survives(scheduler: Scheduler) -> None:
    def boom() -> None:
        raise ValueError("injected")

    with pytest.raises(ValueError, match="injected"):
        scheduler.submit(scheduler.open_session("x"), 0, boom).result(timeout=30)
    assert scheduler.submit(scheduler.open_session("y"), 0, lambda: 42).result(timeout=30) == 42


def test_cancelling_the_await_drops_a_job_that_has_not_started(scheduler: Scheduler) -> None:
    _, release = block_worker(scheduler)
    ran: list[str] = []
    session = scheduler.open_session("async")

    async def scenario() -> None:
        task = asyncio.create_task(scheduler.run(session, 0, lambda: ran.append("never")))
        await asyncio.sleep(0)
        assert scheduler.stats().queued == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert scheduler.stats().queued == 0
    release.set()
    assert scheduler.wait_idle(30)
    assert ran == []
    # the session may go on with its next job
    assert scheduler.submit(session, 1, lambda: "next").result(timeout=30) == "next"


def test_plans_run_while_a_render_is_busy(scheduler: Scheduler) -> None:
    _, release = block_worker(scheduler)
    plan = scheduler.submit_plan(scheduler.open_session("p"), lambda: "planned")
    assert plan.result(timeout=30) == "planned"
    release.set()


def test_two_workers_run_jobs_in_parallel() -> None:
    scheduler = Scheduler(workers=2, name="pair")
    try:
        both = threading.Barrier(2, timeout=30)
        futures = [scheduler.submit(scheduler.open_session(str(i)), 0, both.wait) for i in range(2)]
        assert sorted(f.result(timeout=30) for f in futures) == [0, 1]
    finally:
        scheduler.shutdown()


def test_shutdown_cancels_queued_jobs_and_refuses_new_ones() -> None:
    scheduler = Scheduler(workers=1, name="down")
    _, release = block_worker(scheduler)
    queued = scheduler.submit(scheduler.open_session("q"), 0, lambda: None)
    settled = threading.Event()
    queued.add_done_callback(lambda _f: settled.set())
    stopper = threading.Thread(target=scheduler.shutdown)
    stopper.start()
    assert settled.wait(30)  # shutdown cancels the queued job before it waits for the running one
    release.set()
    stopper.join(30)
    assert queued.cancelled()
    with pytest.raises(SchedulerError, match="shut down"):
        scheduler.submit(scheduler.open_session("late"), 0, lambda: None)


def test_shutdown_resolves_a_queued_plan_and_refuses_new_plans() -> None:
    scheduler = Scheduler(workers=1, name="plans")
    running, release = threading.Event(), threading.Event()

    def hold() -> None:
        running.set()
        assert release.wait(30)

    busy = scheduler.submit_plan(scheduler.open_session("busy"), hold)
    assert running.wait(30)
    queued = scheduler.submit_plan(scheduler.open_session("queued"), lambda: "never")
    settled = threading.Event()
    queued.add_done_callback(lambda _f: settled.set())
    stopper = threading.Thread(target=scheduler.shutdown)
    stopper.start()
    assert settled.wait(30)  # the queued plan is resolved (cancelled) at once, not left pending
    assert queued.cancelled()
    release.set()
    stopper.join(30)
    assert not stopper.is_alive()
    assert busy.result(timeout=1) is None
    with pytest.raises(SchedulerError, match="shut down"):
        scheduler.submit_plan(scheduler.open_session("late"), lambda: None)


def test_an_awaited_plan_does_not_hang_on_shutdown() -> None:
    scheduler = Scheduler(workers=1, name="await")
    running, release = threading.Event(), threading.Event()

    def hold() -> None:
        running.set()
        assert release.wait(30)

    async def scenario() -> None:
        busy = asyncio.ensure_future(scheduler.plan(scheduler.open_session("busy"), hold))
        await asyncio.to_thread(running.wait, 30)
        queued = asyncio.ensure_future(scheduler.plan(scheduler.open_session("queued"), lambda: "never"))
        stopper = asyncio.ensure_future(asyncio.to_thread(scheduler.shutdown))
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(queued, timeout=30)
        release.set()
        await asyncio.wait_for(asyncio.gather(busy, stopper), timeout=30)

    asyncio.run(scenario())


def test_workers_must_be_positive() -> None:
    with pytest.raises(SchedulerError, match="at least one"):
        Scheduler(workers=0)
