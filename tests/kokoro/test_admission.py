"""The admission queue on its own (an event loop, no server): slots are handed over first come first served, a wait
is bounded, and a waiter that leaves never keeps a slot."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import pytest

from kokoro_server.admission import Admission, Ticket

HANG_S = 30.0
"""A deadline that only catches a hang."""


def run(coro: Coroutine[Any, Any, None]) -> None:
    asyncio.run(asyncio.wait_for(coro, HANG_S))


def test_slots_are_taken_at_once_until_full_then_sessions_queue_in_order() -> None:
    async def scenario() -> None:
        admission = Admission(2)
        first, second, third, fourth = (admission.join() for _ in range(4))
        assert first.admitted and second.admitted
        assert not third.admitted and not fourth.admitted
        assert (third.position, fourth.position) == (1, 2)
        stats = admission.stats()
        assert (stats.active, stats.queued, stats.busy) == (2, 2, True)

        order: list[str] = []

        async def wait(name: str, ticket: Ticket) -> None:
            assert await admission.wait_turn(ticket, HANG_S)
            order.append(name)

        waiters = [asyncio.create_task(wait("fourth", fourth)), asyncio.create_task(wait("third", third))]
        await asyncio.sleep(0)
        admission.leave()  # a slot frees: the head of the queue gets it, not whoever asked last
        await asyncio.sleep(0.01)
        assert order == ["third"]
        assert admission.join().admitted is False  # a newcomer queues behind the one still waiting
        admission.leave()
        await asyncio.gather(*waiters)
        assert order == ["third", "fourth"]
        assert admission.stats().active == 2

    run(scenario())


def test_a_wait_past_its_bound_gives_up_and_counts_as_refused() -> None:
    async def scenario() -> None:
        admission = Admission(1)
        assert admission.join().admitted
        late = admission.join()
        assert await admission.wait_turn(late, 0.05) is False
        stats = admission.stats()
        assert (stats.active, stats.queued, stats.refused) == (1, 0, 1)
        admission.leave()
        assert admission.stats().active == 0  # nobody waits: the slot is free

    run(scenario())


def test_a_waiter_that_leaves_is_skipped_and_never_keeps_a_slot() -> None:
    async def scenario() -> None:
        admission = Admission(1)
        assert admission.join().admitted
        gone, next_one = admission.join(), admission.join()
        leaving = asyncio.create_task(admission.wait_turn(gone, HANG_S))
        staying = asyncio.create_task(admission.wait_turn(next_one, HANG_S))
        await asyncio.sleep(0)
        leaving.cancel()
        with pytest.raises(asyncio.CancelledError):
            await leaving
        admission.leave()
        assert await staying
        assert admission.stats().active == 1 and admission.stats().queued == 0

    run(scenario())


def test_a_slot_handed_to_a_waiter_that_is_cancelled_at_that_moment_is_passed_on() -> None:
    async def scenario() -> None:
        admission = Admission(1)
        assert admission.join().admitted
        unlucky, next_one = admission.join(), admission.join()
        leaving = asyncio.create_task(admission.wait_turn(unlucky, HANG_S))
        await asyncio.sleep(0)
        admission.leave()  # the slot is handed to `unlucky`...
        leaving.cancel()  # ...which is cancelled before it runs again
        with pytest.raises(asyncio.CancelledError):
            await leaving
        assert await admission.wait_turn(next_one, HANG_S)  # the slot went on, not lost
        assert admission.stats().active == 1

    run(scenario())


def test_leaving_without_a_slot_is_a_bug_that_says_so() -> None:
    with pytest.raises(RuntimeError, match="counted twice"):
        Admission(1).leave()
    with pytest.raises(ValueError, match="at least one"):
        Admission(0)


def test_a_waiter_hears_its_place_in_line_as_the_line_moves() -> None:
    async def scenario() -> None:
        admission = Admission(1)
        assert admission.join().admitted
        ahead, waiter = admission.join(), admission.join()
        places: list[int] = []
        heard = {2: asyncio.Event(), 1: asyncio.Event()}

        async def still_waiting(place: int) -> None:
            places.append(place)
            heard[place].set()

        waiting = asyncio.create_task(admission.wait_turn(waiter, HANG_S, still_waiting=still_waiting, every_s=0.01))
        await heard[2].wait()
        leaving = asyncio.create_task(admission.wait_turn(ahead, HANG_S))
        await asyncio.sleep(0)
        leaving.cancel()  # the one ahead leaves the line
        await asyncio.gather(leaving, return_exceptions=True)
        await heard[1].wait()
        admission.leave()
        assert await waiting
        assert places[0] == 2 and places[-1] == 1 and sorted(places, reverse=True) == places

    run(scenario())
