"""Log keys are per invocation: two invocations running at once in one process (as the local stack runs the
functions) never see each other's keys, and an invocation never inherits the keys of an earlier one on the same
thread."""

from __future__ import annotations

import json
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import pytest

from relay_functions.gateway import observability
from relay_functions.gateway.observability import append_keys, log_invocation, logger

from .conftest import FakeLambdaContext


class Capture(logging.Handler):
    """Every record as the function's JSON log line would show it (formatted on the logging thread)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[dict[str, Any]] = []
        self._lock2 = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        line = json.loads(logger.registered_formatter.format(record))
        with self._lock2:
            self.lines.append(line)


@pytest.fixture
def captured() -> Any:
    capture = Capture()
    logger._logger.addHandler(capture)  # the very logger the functions use
    try:
        yield capture
    finally:
        logger._logger.removeHandler(capture)


def test_concurrent_invocations_keep_their_own_keys(captured: Capture) -> None:
    both_keyed = threading.Barrier(2, timeout=10)

    @log_invocation
    def handler(event: dict[str, Any], context: Any) -> str:
        append_keys(turn_id=event["turn_id"])
        both_keyed.wait()  # each has set its keys before either logs
        logger.info("relaying")
        return str(event["turn_id"])

    contexts = [
        replace(FakeLambdaContext(), function_name=name, aws_request_id=f"req-{name}")
        for name in ("kokoro-relay-relay", "kokoro-relay-disconnect")
    ]
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(handler, [{"turn_id": "t-a"}, {"turn_id": "t-b"}], contexts))
    assert results == ["t-a", "t-b"]
    seen = {(line["turn_id"], line["function_name"], line["function_request_id"]) for line in captured.lines}
    assert seen == {
        ("t-a", "kokoro-relay-relay", "req-kokoro-relay-relay"),
        ("t-b", "kokoro-relay-disconnect", "req-kokoro-relay-disconnect"),
    }


def test_an_invocation_starts_without_the_keys_of_the_previous_one_on_its_thread(captured: Capture) -> None:
    @log_invocation
    def handler(event: dict[str, Any], context: Any) -> None:
        if "turn_id" in event:
            append_keys(turn_id=event["turn_id"])
        logger.info("handled")

    with ThreadPoolExecutor(1) as pool:  # one worker thread, reused, as a pool of handler threads is
        pool.submit(handler, {"turn_id": "t-first"}, FakeLambdaContext()).result()
        pool.submit(handler, {}, FakeLambdaContext()).result()
    first, second = captured.lines
    assert first["turn_id"] == "t-first"
    assert "turn_id" not in second
    assert observability.logger.thread_safe_get_current_keys() == {}
