"""Ctrl-C that stops a command cleanly however many times it arrives.

A terminal sends SIGINT to the whole foreground process group (``make``, ``uv run`` and ``relay``), and ``uv run``
passes its copy on to its child, so one keypress reaches ``relay`` twice, and an impatient user presses it again.
Python's default handler raises ``KeyboardInterrupt`` for each one, so the second copy lands in the middle of the
clean-up the first one started (a ``threading.join`` while the stack stops): a traceback, and servers left behind.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


@contextmanager
def first_interrupt_only() -> Iterator[None]:
    """Inside the block the first SIGINT raises ``KeyboardInterrupt`` (as Python's default handler does) and
    ignores every later SIGINT until the block ends, so the clean-up the first one starts (``finally``, ``with``
    exits) runs to its end. The previous handler is restored on leaving the block. Outside the main thread it
    changes nothing (signals reach only the main thread, and only it may set a handler)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt_once(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, interrupt_once)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


__all__ = ["first_interrupt_only"]
