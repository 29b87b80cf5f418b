"""relay's log lines in a terminal: one line each, an exception summarised, tracebacks only with RELAY_DEBUG=1."""

from __future__ import annotations

import logging

import pytest

from relay_cli.terminal_logging import FORMAT, OneLineFormatter, configure


def _record_with_exception() -> logging.LogRecord:
    try:
        raise ValueError("the model id is invalid\nsecond line")
    except ValueError as exc:
        return logging.LogRecord("voice_agent.turn", logging.WARNING, __file__, 1, "the model failed", (), (
            type(exc), exc, exc.__traceback__))  # fmt: skip


def test_an_exception_becomes_the_end_of_the_one_line() -> None:
    line = OneLineFormatter(FORMAT).format(_record_with_exception())
    assert line == "WARNING voice_agent.turn: the model failed: ValueError: the model id is invalid"
    assert "Traceback" not in line


@pytest.mark.parametrize(("debug", "traceback"), [("", False), ("1", True)])
def test_relay_debug_keeps_the_traceback(debug: str, traceback: bool) -> None:
    root = logging.getLogger()
    saved = root.handlers[:]
    root.handlers.clear()
    try:
        configure({"RELAY_DEBUG": debug})
        (handler,) = root.handlers
        assert ("Traceback" in handler.format(_record_with_exception())) is traceback
    finally:
        root.handlers[:] = saved
