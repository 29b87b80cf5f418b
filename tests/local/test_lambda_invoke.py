"""The local Lambda Invoke service's asynchronous invocations when the stack stops under them: an abandoned one
(a relay lingering for a ``resume``, polling DynamoDB) logs nothing more, so a command's report is the last thing
its user sees; invocations before the stop, and every other thread, log as before."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from relay_local.gateway.lambda_invoke import LambdaInvokeService


class Collected(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def relay_log() -> Iterator[tuple[logging.Logger, Collected]]:
    """A logger of its own with a handler that keeps what reaches it (as the functions' JSON logger has)."""
    log = logging.getLogger("tests.lingering-relay")
    handler = Collected()
    log.addHandler(handler)
    log.propagate = False
    log.setLevel(logging.WARNING)
    yield log, handler
    log.removeHandler(handler)


def test_an_abandoned_invocation_logs_nothing_while_everything_else_still_does(
    relay_log: tuple[logging.Logger, Collected],
) -> None:
    log, handler = relay_log
    release = threading.Event()

    def relay(event: Any, context: Any) -> None:
        if event["linger"]:
            release.wait(10)
        log.warning("reading the turn record failed; trying again at the next poll (%s)", event["name"])

    service = LambdaInvokeService({"relay": relay})
    service.start_async("relay", {"linger": False, "name": "before the stop"})
    assert service.wait_idle(10)
    service.start_async("relay", {"linger": True, "name": "lingering"})
    service.abandon()
    release.set()
    assert service.wait_idle(10)
    log.warning("the command's own line")

    assert handler.messages == [
        "reading the turn record failed; trying again at the next poll (before the stop)",
        "the command's own line",
    ]
    assert service.completed == 2
