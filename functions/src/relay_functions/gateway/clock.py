"""Time, injectable: the stores and the relay take a :class:`Clock` so tests control the window arithmetic."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """``now()``: wall-clock epoch seconds (stored in DynamoDB); ``monotonic()``: for intervals in one process."""

    def now(self) -> float: ...

    def monotonic(self) -> float: ...


class SystemClock:
    """The real clock."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


SYSTEM_CLOCK = SystemClock()
