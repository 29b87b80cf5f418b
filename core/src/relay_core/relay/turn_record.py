"""The turn record's rules as one table: who may change a turn's record, from which state, on which condition.

The gateway keeps one record per turn (the turns table, docs/functions.md); five functions write it and the relay
reads it to be steered. Each write is a :class:`Transition`: the states it is allowed from, the state it leaves
the record in, and its guards (who the turn belongs to, which connection it uses, ...). :func:`condition` generates
the write's DynamoDB ``ConditionExpression`` from the table, so the stored conditions cannot drift from the rules
(in the spirit of h11's state tables). Sans-I/O: strings in, strings out; no AWS here.

``running`` (the agent is streaming) → ``ended`` (the terminal message is framed; the relay may linger for a
detached client's resume) → ``closed`` (the relay has exited: nothing can be resumed any more).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class TurnState(StrEnum):
    RUNNING = "running"
    ENDED = "ended"
    CLOSED = "closed"


class RelayOutcome(StrEnum):
    """How the relay ended a turn: the record's ``outcome`` (all but ``duplicate``, which is never stored)."""

    COMPLETED = "completed"
    CANCELLED = "cancelled"
    FAILED = "failed"
    ABANDONED = "abandoned"
    """The client went away and did not resume within the window."""
    DUPLICATE = "duplicate"
    """A repeated relay invocation for a turn another relay already runs (never stored)."""


class RecordWrite(StrEnum):
    """Every write to a turn record, named by what it does."""

    CREATE = "create"
    CLAIM_RELAY = "claim_relay"
    REQUEST_CANCEL = "request_cancel"
    MARK_DETACHED = "mark_detached"
    RESUME = "resume"
    END = "end"
    CLOSE = "close"


class Guard(StrEnum):
    """A condition on the record besides its state; the value is its DynamoDB expression (placeholders as named)."""

    OWNER = "user_id = :u"
    """The turn belongs to the user on the connection that asks (``:u``)."""
    SAME_CONNECTION = "connection_id = :c"
    """The turn still uses the connection that went away (``:c``)."""
    NOT_DETACHED = "attribute_not_exists(detached_at)"
    """Not already recorded as detached (the first detection's time is kept)."""
    WITHIN_RESUME_WINDOW = "(attribute_not_exists(detached_at) OR detached_at >= :cutoff)"
    """The client was away no longer than the resume window (``:cutoff`` = now - window)."""
    NO_RELAY_YET = "attribute_not_exists(relay_started_at)"
    """No relay took the turn yet (Lambda may deliver an asynchronous invocation twice)."""
    NO_NEW_RESUME = "resume_count = :seen"
    """No resume arrived since the relay last looked (``:seen``): it must serve that resume first."""


ANY_STATE = frozenset(TurnState)
OPEN = frozenset({TurnState.RUNNING, TurnState.ENDED})


@dataclass(frozen=True, slots=True)
class Transition:
    """One write: allowed when the record exists in one of ``from_states`` (``None``: when it does not exist) and
    every guard holds; it leaves the record in ``to_state`` (``None``: unchanged)."""

    write: RecordWrite
    writer: str
    from_states: frozenset[TurnState] | None
    to_state: TurnState | None
    guards: tuple[Guard, ...] = ()
    meaning: str = ""


TRANSITIONS: dict[RecordWrite, Transition] = {
    t.write: t
    for t in (
        Transition(RecordWrite.CREATE, "sendMessage", None, TurnState.RUNNING, (), "a new turn id only"),
        Transition(
            RecordWrite.CLAIM_RELAY, "relay", OPEN, None, (Guard.NO_RELAY_YET,), "a repeated invocation does nothing"
        ),
        Transition(
            RecordWrite.REQUEST_CANCEL,
            "cancel",
            frozenset({TurnState.RUNNING}),
            None,
            (Guard.OWNER,),
            "sets cancel_requested (+ played_ms); an ended turn goes to the agent through the relay (late barge-in)",
        ),
        Transition(
            RecordWrite.MARK_DETACHED,
            "$disconnect, relay",
            OPEN,
            None,
            (Guard.SAME_CONNECTION, Guard.NOT_DETACHED),
            "sets detached_at: the relay stops posting and keeps buffering",
        ),
        Transition(
            RecordWrite.RESUME,
            "resume",
            OPEN,
            None,
            (Guard.OWNER, Guard.WITHIN_RESUME_WINDOW),
            "switches connection_id, sets resume_after_seq, resume_count + 1, clears detached_at",
        ),
        Transition(
            RecordWrite.END,
            "relay",
            OPEN,
            TurnState.ENDED,
            (),
            "before the terminal message is posted (the connection is released then too)",
        ),
        Transition(
            RecordWrite.CLOSE,
            "relay, sendMessage",
            ANY_STATE,
            TurnState.CLOSED,
            (Guard.NO_NEW_RESUME,),
            "the relay exits (or was never invoked): nothing is resumable any more",
        ),
    )
}
"""The table. Read it against docs/client-protocol.md §2 (cancel), §6 (resume) and docs/functions.md (the relay)."""


STATE_NAME = "#state"
"""The expression name of the ``state`` attribute (a DynamoDB reserved word)."""


def state_placeholder(state: TurnState) -> str:
    return f":{state.value}"


def condition(write: RecordWrite) -> str:
    """The DynamoDB ``ConditionExpression`` of ``write``, generated from :data:`TRANSITIONS`."""
    transition = TRANSITIONS[write]
    if transition.from_states is None:
        return "attribute_not_exists(pk)"
    parts = ["attribute_exists(pk)"]
    allowed = transition.from_states
    if allowed != ANY_STATE:
        if len(allowed) == 1:
            (only,) = allowed
            parts.append(f"{STATE_NAME} = {state_placeholder(only)}")
        else:
            parts.extend(f"{STATE_NAME} <> {state_placeholder(s)}" for s in sorted(ANY_STATE - allowed))
    parts.extend(guard.value for guard in transition.guards)
    return " AND ".join(parts)


def state_values(write: RecordWrite) -> dict[str, dict[str, str]]:
    """The state placeholders :func:`condition` (and the write's own ``to_state``) use, as DynamoDB values."""
    transition = TRANSITIONS[write]
    states = set() if transition.from_states is None else set(ANY_STATE - transition.from_states)
    if transition.from_states is not None and len(transition.from_states) == 1:
        states = set(transition.from_states)
    if transition.to_state is not None and write is not RecordWrite.CREATE:
        states.add(transition.to_state)
    return {state_placeholder(s): {"S": s.value} for s in states}


def allowed(write: RecordWrite, state: TurnState | None) -> bool:
    """Whether ``write`` may happen to a record in ``state`` (``None``: no record), guards aside."""
    from_states = TRANSITIONS[write].from_states
    return state is None if from_states is None else state in from_states


def table_markdown() -> str:
    """The table as Markdown (docs/functions.md carries it; a test keeps them equal)."""
    rows = ["| write | by | from | to | also requires | what it does |", "|---|---|---|---|---|---|"]
    for t in TRANSITIONS.values():
        from_text = (
            "no record" if t.from_states is None else ", ".join(s.value for s in TurnState if s in t.from_states)
        )
        to_text = t.to_state.value if t.to_state is not None else "(unchanged)"
        guards = ", ".join(f"`{g.value}`" for g in t.guards) or "—"
        rows.append(f"| `{t.write.value}` | {t.writer} | {from_text} | {to_text} | {guards} | {t.meaning} |")
    return "\n".join(rows)


__all__ = [
    "TRANSITIONS",
    "Guard",
    "RecordWrite",
    "RelayOutcome",
    "Transition",
    "TurnState",
    "allowed",
    "condition",
    "state_values",
    "table_markdown",
]
