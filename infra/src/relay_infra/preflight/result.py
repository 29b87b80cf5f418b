"""One check's outcome and the one line it prints."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Status(StrEnum):
    """How a check ended. Only :attr:`PASS` and :attr:`WARN` let the preflight succeed."""

    PASS = "✓"  # noqa: S105 - a status mark, not a password
    WARN = "!"
    """Deployable, but something deserves attention (e.g. the quota covers the minimum but not the maximum)."""
    FAIL = "✗"
    SKIP = "-"
    """Could not run (e.g. no credentials); counts as a failure, since nothing was verified."""


@dataclass(frozen=True, slots=True)
class CheckResult:
    """A check's name, what it found, and (for anything but a pass) what to do about it."""

    name: str
    status: Status
    found: str
    fix: str = ""

    @property
    def ok(self) -> bool:
        """True when this check does not block a deploy."""
        return self.status in (Status.PASS, Status.WARN)

    def line(self, width: int = 14) -> str:
        """``✓ quota          ml.g5.xlarge for endpoint usage = 4 (need >= 1)``, with ``; fix: ...`` unless passed.

        Always a single line: newlines in what AWS or a command returned are folded into spaces."""
        text = f"{self.status.value} {self.name:<{width}} {_one_line(self.found)}"
        if self.fix and self.status is not Status.PASS:
            text += f"; fix: {_one_line(self.fix)}"
        return text


def _one_line(text: str) -> str:
    return " ".join(text.split())
