"""The history store's writer: its writes run on one thread of their own, in order; a failure is logged and does not
stop the writes after it; ``flush`` waits for what was queued before it (and never for itself)."""

from __future__ import annotations

import functools
import logging
import threading

import pytest

from voice_agent.history_writer import HistoryWriter

HANG_S = 30.0
"""Only catches a hang."""


def test_writes_run_in_the_order_they_were_queued_on_the_writer_thread() -> None:
    writer = HistoryWriter()
    done: list[tuple[int, str]] = []
    caller = threading.current_thread().name

    def write(n: int) -> None:
        done.append((n, threading.current_thread().name))

    for n in range(50):
        writer.submit("conversation", f"write {n}", functools.partial(write, n))
    assert writer.flush("conversation", timeout=HANG_S)
    assert [n for n, _ in done] == list(range(50))
    assert {name for _, name in done} == {"history-writer"} and caller != "history-writer"


def test_flush_waits_for_the_writes_of_its_key_queued_before_it() -> None:
    writer = HistoryWriter()
    release = threading.Event()
    writer.submit("a", "held", release.wait)
    writer.submit("a", "after the held one", lambda: None)
    assert not writer.flush("a", timeout=0.05)
    assert writer.pending("a") == 2 and writer.pending("b") == 0
    assert writer.flush("b", timeout=HANG_S), "another conversation has nothing queued"
    release.set()
    assert writer.flush("a", timeout=HANG_S) and writer.pending() == 0


def test_a_failed_write_is_logged_and_counted_and_the_next_one_still_runs(caplog: pytest.LogCaptureFixture) -> None:
    writer = HistoryWriter()
    done: list[str] = []

    def fail() -> None:
        raise OSError("the bucket is unreachable")

    with caplog.at_level(logging.ERROR, logger="voice_agent.history_writer"):
        writer.submit("a", "message 3 of conversation a", fail)
        writer.submit("a", "message 4 of conversation a", lambda: done.append("4"))
        assert writer.flush("a", timeout=HANG_S)
    assert done == ["4"] and writer.failures == 1
    assert "history write failed (message 3 of conversation a): OSError: the bucket is unreachable" in caplog.text


def test_a_flush_from_a_write_returns_at_once_rather_than_waiting_for_itself() -> None:
    writer = HistoryWriter()
    answers: list[bool] = []
    writer.submit("a", "a write that flushes", lambda: answers.append(writer.flush("a", timeout=HANG_S)))
    assert writer.flush("a", timeout=HANG_S) and answers == [True]
