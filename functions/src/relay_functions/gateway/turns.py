"""The turns table: one item per turn, the meeting point of the relay and the route handlers.

The relay (one Lambda invocation per turn) streams the agent's events; the ``cancel``, ``resume`` and
``$disconnect`` handlers (other Lambdas) steer it only through this item, which the relay reads every
:data:`relay_functions.gateway.turn_relay.POLL_INTERVAL_S` (the rules: :mod:`relay_core.relay.turn`):

- ``cancel_requested`` (+ ``played_ms`` when the client said how much it played): set by ``cancel``; the relay
  sends the agent its cancel request, with ``played_ms`` (truthful barge-in: the agent keeps the words heard).
- ``connection_id`` + ``resume_after_seq`` + ``resume_count``: switched by ``resume``; the relay replays its
  buffer after ``resume_after_seq`` to the new connection, then continues live there.
- ``detached_at``: set when the client's connection went away (``$disconnect`` or a ``GoneException``);
  cleared by a resume. A turn detached for longer than RESUME_WINDOW_S is abandoned: the relay cancels the
  agent turn (so no speech is synthesized for nobody) and stops.
- ``state``: ``running`` (streaming), ``ended`` (the agent finished; the relay lingers for a detached client
  to resume), ``closed`` (the relay has exited: nothing can be resumed). ``outcome`` says how it ended.

Items carry ``expires_at`` (TTL) a day after creation. Which write is allowed from which state, and on which
condition, is :data:`relay_core.relay.turn_record.TRANSITIONS`; every condition written here is generated from it
(:func:`relay_core.relay.turn_record.condition`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from relay_core.errors import ResumeExpiredError, UnknownTurnError
from relay_core.relay.turn_record import RecordWrite, RelayOutcome, TurnState, condition, state_values
from relay_functions.gateway.clock import SYSTEM_CLOCK, Clock
from relay_functions.gateway.connections import is_conditional_failure

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

TURN_TTL_S = 24 * 3600


@dataclass(frozen=True, slots=True)
class Turn:
    turn_id: str
    user_id: str
    session_id: str
    connection_id: str
    state: TurnState
    outcome: str | None
    cancel_requested: bool
    detached_at: float | None
    resume_count: int
    resume_after_seq: int
    created_at: float
    played_ms: int | None = None
    """Milliseconds of the turn's audio the client played when it cancelled (None: it did not say)."""


class TurnStore:
    """Reads and writes the turns table."""

    def __init__(self, client: DynamoDBClient, table: str, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self._db = client
        self._table = table
        self._clock = clock

    def create(self, turn_id: str, *, user_id: str, session_id: str, connection_id: str) -> Turn:
        """Create the turn's record (a conditional write: a turn id already used fails); the record as written."""
        now = self._clock.now()
        item: dict[str, Any] = {
            "pk": {"S": turn_id},
            "user_id": {"S": user_id},
            "session_id": {"S": session_id},
            "connection_id": {"S": connection_id},
            "state": {"S": TurnState.RUNNING.value},
            "cancel_requested": {"BOOL": False},
            "resume_count": {"N": "0"},
            "resume_after_seq": {"N": "-1"},
            "created_at": {"N": _num(now)},
            "updated_at": {"N": _num(now)},
            "expires_at": {"N": str(int(now) + TURN_TTL_S)},
        }
        self._db.put_item(TableName=self._table, Item=item, ConditionExpression=condition(RecordWrite.CREATE))
        return _turn(item)

    def get(self, turn_id: str) -> Turn | None:
        response = self._db.get_item(TableName=self._table, Key={"pk": {"S": turn_id}}, ConsistentRead=True)
        item = response.get("Item")
        return _turn(item) if item else None

    def request_cancel(self, turn_id: str, *, user_id: str, played_ms: int | None = None) -> bool:
        """Flag a running turn of ``user_id`` for cancellation, recording ``played_ms`` when given (a later cancel
        with it replaces an earlier one's); False if there is no such turn still streaming (state ``running``)."""
        update = "SET cancel_requested = :true, updated_at = :now"
        values: dict[str, Any] = {":true": {"BOOL": True}, ":u": {"S": user_id}}
        if played_ms is not None:
            update += ", played_ms = :played"
            values[":played"] = {"N": str(played_ms)}
        return self._update(turn_id, RecordWrite.REQUEST_CANCEL, update, values)

    def mark_detached(self, turn_id: str, *, connection_id: str) -> bool:
        """Record that the turn's client connection went away (if the turn still uses it and is not already
        detached). The time is the first detection's."""
        return self._update(
            turn_id,
            RecordWrite.MARK_DETACHED,
            "SET detached_at = :now, updated_at = :now",
            {":c": {"S": connection_id}},
        )

    def resume(self, turn_id: str, *, user_id: str, connection_id: str, after_seq: int, window_s: float) -> Turn:
        """Switch the turn to a new connection, replaying after ``after_seq``; the record as this write found it,
        returned by the write itself (its ``connection_id`` is the connection the turn leaves: of two resumes racing,
        each learns the one it replaced, which no read before or after the write can tell). Raises
        ``UnknownTurnError`` (no such turn for this user) or ``ResumeExpiredError`` (the relay has exited, or the
        client was away longer than ``window_s``)."""
        now = self._clock.now()
        values: dict[str, Any] = {
            ":c": {"S": connection_id},
            ":a": {"N": str(after_seq)},
            ":one": {"N": "1"},
            ":u": {"S": user_id},
            ":cutoff": {"N": _num(now - window_s)},
        }
        update = (
            "SET connection_id = :c, resume_after_seq = :a, resume_count = resume_count + :one, updated_at = :now "
            "REMOVE detached_at"
        )
        try:
            response = self._write(
                turn_id,
                RecordWrite.RESUME,
                update,
                values,
                ReturnValues="ALL_OLD",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if not is_conditional_failure(exc):
                raise
            found: Mapping[str, Any] = exc.response  # with ALL_OLD, a failed condition answers the record as it is
            record = found.get("Item")
            if not record or record.get("user_id", {}).get("S") != user_id:
                raise UnknownTurnError(f"there is no turn {turn_id!r} of yours: check the turn_id") from None
            raise ResumeExpiredError(
                "this turn can no longer be resumed (it finished, or you were away too long): send the prompt again",
            ) from None
        return _turn(response["Attributes"])

    def claim_relay(self, turn_id: str) -> bool:
        """Mark the turn as taken by a relay; False if a relay already took it (Lambda may deliver an asynchronous
        invocation more than once: the duplicate must not run the turn again) or the turn is closed/unknown."""
        return self._update(turn_id, RecordWrite.CLAIM_RELAY, "SET relay_started_at = :now, updated_at = :now", {})

    def end(self, turn_id: str, *, outcome: RelayOutcome) -> None:
        """The agent's stream is over; the relay may still linger for a detached client."""
        self._update(
            turn_id,
            RecordWrite.END,
            "SET #state = :ended, outcome = :o, updated_at = :now",
            {":o": {"S": outcome.value}},
        )

    def close(self, turn_id: str, *, seen_resume_count: int, outcome: RelayOutcome | None = None) -> bool:
        """The relay exits: nothing is resumable any more. False (and nothing written) when a resume arrived
        after the relay last looked (``resume_count`` moved): the relay must serve it first."""
        values: dict[str, Any] = {":seen": {"N": str(seen_resume_count)}}
        update = "SET #state = :closed, updated_at = :now"
        if outcome is not None:
            update += ", outcome = :o"
            values[":o"] = {"S": outcome.value}
        return self._update(turn_id, RecordWrite.CLOSE, update, values)

    def _update(self, turn_id: str, write: RecordWrite, update: str, values: dict[str, Any]) -> bool:
        """One conditional write of the table's ``write``; False when its condition does not hold."""
        try:
            self._write(turn_id, write, update, values)
        except ClientError as exc:
            if is_conditional_failure(exc):
                return False
            raise
        return True

    def _write(self, turn_id: str, write: RecordWrite, update: str, values: dict[str, Any], **returns: str) -> Any:
        """One conditional write of the table's ``write`` (its condition generated from the table), asking for
        ``returns`` (``ReturnValues`` ...); the response. A condition that does not hold raises DynamoDB's
        ``ConditionalCheckFailedException``."""
        check = condition(write)
        values = {**values, **state_values(write), ":now": {"N": _num(self._clock.now())}}
        names = {"#state": "state"} if "#state" in update or "#state" in check else None
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "Key": {"pk": {"S": turn_id}},
            "UpdateExpression": update,
            "ConditionExpression": check,
            "ExpressionAttributeValues": values,
            **returns,
        }
        if names:
            kwargs["ExpressionAttributeNames"] = names
        return self._db.update_item(**kwargs)


def _turn(item: dict[str, Any]) -> Turn:
    detached = item.get("detached_at", {}).get("N")
    played = item.get("played_ms", {}).get("N")
    return Turn(
        turn_id=item["pk"]["S"],
        user_id=item["user_id"]["S"],
        session_id=item["session_id"]["S"],
        connection_id=item["connection_id"]["S"],
        state=TurnState(item["state"]["S"]),
        outcome=item.get("outcome", {}).get("S"),
        cancel_requested=bool(item.get("cancel_requested", {}).get("BOOL", False)),
        detached_at=float(detached) if detached is not None else None,
        resume_count=int(item["resume_count"]["N"]),
        resume_after_seq=int(item["resume_after_seq"]["N"]),
        created_at=float(item["created_at"]["N"]),
        played_ms=int(played) if played is not None else None,
    )


def _num(value: float) -> str:
    return f"{value:.3f}"


__all__ = ["TURN_TTL_S", "Turn", "TurnState", "TurnStore"]
