"""What the relay's turn machine (:mod:`relay_core.relay.turn`) takes in besides bytes, and the commands it gives out.

The relay's driver (``relay_functions.gateway.turn_relay``) executes each command the machine returns, in order,
and answers the four that have a result (:data:`ANSWERS`) before it asks for the next command or feeds anything
else. Everything here is a frozen value: no I/O, no AWS.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from relay_core.relay.turn_record import RelayOutcome


class PostOutcome(StrEnum):
    """What became of one ``@connections`` post."""

    DELIVERED = "delivered"
    GONE = "gone"
    """The connection no longer exists (``GoneException``): the client went away."""
    FAILED = "failed"
    """Not delivered for another reason, after the poster's own retries (throttling, an unreachable endpoint)."""


class PostKind(StrEnum):
    MESSAGE = "message"
    """A numbered turn message (``seq`` set), live or replayed."""
    ACCEPTED = "accepted"
    """``turn_accepted``, opening a replay after a resume."""
    REJECTION = "rejection"
    """``error`` without ``seq``: a resume that cannot be served."""


class LogLevel(StrEnum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class RecordRead:
    """One read of the turn record, as the relay needs it (the driver converts the stored item)."""

    connection_id: str
    cancel_requested: bool = False
    played_ms: int | None = None
    resume_count: int = 0
    resume_after_seq: int = -1
    away_s: float | None = None
    """How long ago the client was recorded as gone (``detached_at``), in seconds; None when it was not."""


# --- commands ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Post:
    """Post ``message`` to ``connection_id``. Answer: :meth:`RelayTurn.post_done` with a :class:`PostOutcome`."""

    connection_id: str
    message: str
    seq: int | None
    """The message's seq (``None`` for ``turn_accepted`` and rejections)."""
    kind: PostKind = PostKind.MESSAGE
    terminal: bool = False
    """This is the turn's terminal message (``agent_end`` or ``error`` with ``seq``)."""


@dataclass(frozen=True, slots=True)
class FreeConnection:
    """Before the terminal goes to ``connection_id``: mark the record ``ended`` with ``outcome`` (when
    ``end_record``) and release the connection's claim on the turn. Answer: :meth:`RelayTurn.connection_freed`."""

    connection_id: str
    outcome: RelayOutcome
    end_record: bool


@dataclass(frozen=True, slots=True)
class EndRecord:
    """Mark the record ``ended`` with ``outcome`` (the terminal was framed while the client was away)."""

    outcome: RelayOutcome


@dataclass(frozen=True, slots=True)
class ReadRecord:
    """Read the turn record now. Answer: :meth:`RelayTurn.record_read` (or :meth:`RelayTurn.record_unreadable`)."""


@dataclass(frozen=True, slots=True)
class CloseRecord:
    """Close the record (state ``closed``, ``outcome``) unless a resume came after ``seen_resume_count``.
    Answer: :meth:`RelayTurn.record_closed` with whether the write happened."""

    seen_resume_count: int
    outcome: RelayOutcome


@dataclass(frozen=True, slots=True)
class CancelAgent:
    """Send the agent its cancel request for this turn, with what the client played when it said."""

    played_ms: int | None = None


@dataclass(frozen=True, slots=True)
class MarkDetached:
    """Record in the turn that ``connection_id`` is gone (``detached_at``)."""

    connection_id: str


@dataclass(frozen=True, slots=True)
class CloseStream:
    """Close the agent's stream: nothing more is read from it."""


@dataclass(frozen=True, slots=True)
class ReleaseConnection:
    """Clear ``connection_id``'s claim on the turn, if it still holds it (the relay exits)."""

    connection_id: str


@dataclass(frozen=True, slots=True)
class Log:
    """Write ``message`` to the relay's log at ``level`` (a decision the machine made; no I/O failure)."""

    level: LogLevel
    message: str


RelayCommand = (
    (Post | FreeConnection | EndRecord | ReadRecord | CloseRecord | CancelAgent | MarkDetached | CloseStream)
    | ReleaseConnection
    | Log
)

ANSWERS: dict[type, str] = {
    Post: "post_done()",
    FreeConnection: "connection_freed()",
    ReadRecord: "record_read() or record_unreadable()",
    CloseRecord: "record_closed()",
}
"""The commands that have a result, and the method that reports it."""


@dataclass
class RelayResult:
    """What happened, for logs and metrics."""

    outcome: RelayOutcome = RelayOutcome.COMPLETED
    messages: int = 0
    """Messages framed (the turn's last seq + 1)."""
    posted: int = 0
    failed_posts: int = 0
    replays: int = 0
    replayed_messages: int = 0
    time_to_first_audio_s: float | None = None
    """From the relay's start to the first audio message delivered."""
    cancel_latency_s: float | None = None
    """From the relay's cancel request to the agent to the terminal message being framed."""
    error_codes: list[str] = field(default_factory=list)


__all__ = [
    "ANSWERS",
    "CancelAgent",
    "CloseRecord",
    "CloseStream",
    "EndRecord",
    "FreeConnection",
    "Log",
    "LogLevel",
    "MarkDetached",
    "Post",
    "PostKind",
    "PostOutcome",
    "ReadRecord",
    "RecordRead",
    "RelayCommand",
    "RelayResult",
    "ReleaseConnection",
]
