"""The relay's phases and the inputs each accepts: the table a newcomer checks against docs/functions.md.

:class:`~relay_core.relay.turn.RelayTurn` refuses any input its phase does not list here
(:class:`~relay_core.errors.SessionStateError`); docs/functions.md carries :func:`phase_table_markdown`'s output,
and a test keeps the two equal.
"""

from __future__ import annotations

from enum import Enum, StrEnum


class RelayPhase(Enum):
    """Where one relayed turn is: the agent's stream is open, the terminal is framed, the record is closing, done."""

    STREAMING = "streaming"
    LINGERING = "lingering"
    CLOSING = "closing"
    DONE = "done"


class RelayInput(StrEnum):
    """What the relay's driver reports to the machine."""

    AGENT_BYTES = "agent_bytes"
    AGENT_CLOSED = "agent_closed"
    AGENT_FAILED = "agent_failed"
    AGENT_UNREACHABLE = "agent_unreachable"
    RECORD_READ = "record_read"
    TICK = "tick"


_AGENT_INPUTS = (RelayInput.AGENT_BYTES, RelayInput.AGENT_CLOSED, RelayInput.AGENT_FAILED)

PHASE_TABLE: dict[RelayPhase, dict[RelayInput, str]] = {
    RelayPhase.STREAMING: {
        RelayInput.AGENT_BYTES: "decode, join text, frame, buffer and post; the terminal event → lingering",
        RelayInput.AGENT_CLOSED: "a stream without a terminal event ends the turn: error agent_unavailable",
        RelayInput.AGENT_FAILED: "error agent_unavailable",
        RelayInput.AGENT_UNREACHABLE: "error agent_unavailable",
        RelayInput.RECORD_READ: "cancel requested → cancel the agent; resume → replay there; detached → buffer only",
        RelayInput.TICK: "held text due; away > resume window → cancel, closing (abandoned); grace over → end it",
    },
    RelayPhase.LINGERING: {
        **{kind: "ignored: the turn's terminal is framed" for kind in _AGENT_INPUTS},
        RelayInput.RECORD_READ: "cancel with played_ms → the agent (late barge-in); resume → replay there",
        RelayInput.TICK: "client back, or away > resume window → closing",
    },
    RelayPhase.CLOSING: {},
    RelayPhase.DONE: {},
}
"""Which input each phase accepts and what it does; any other input is refused (closing only runs commands)."""


def phase_table_markdown() -> str:
    """:data:`PHASE_TABLE` as Markdown (docs/functions.md carries it; a test keeps them equal)."""
    rows = ["| phase | input | what it does |", "|---|---|---|"]
    for phase, rules in PHASE_TABLE.items():
        if not rules:
            rows.append(f"| {phase.value} | (none: commands only) | — |")
        rows.extend(f"| {phase.value} | `{kind.value}` | {meaning} |" for kind, meaning in rules.items())
    return "\n".join(rows)


__all__ = ["PHASE_TABLE", "RelayInput", "RelayPhase", "phase_table_markdown"]
