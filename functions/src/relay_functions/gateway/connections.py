"""The connections table: who is on each WebSocket connection, the turn it runs, and each user's conversation.

Items (partition key ``pk``, TTL attribute ``expires_at``):

- ``conn#<connection id>``: ``user_id``, ``session_id`` (the user's conversation when the connection was made),
  ``connected_at``, ``expires_at`` (connected_at + CONNECTION_TTL_S) and, while a turn runs on it,
  ``active_turn`` + ``active_turn_expires``.
- ``conversation#<user id>``: ``session_id``, the AgentCore runtime session id of the user's conversation
  (:func:`relay_core.agent.conversation_ids.new_session_id`: it carries the user's key, so the user's stored
  conversations can be found and erased), which every connection of the user shares, so a reconnecting client
  continues it. Each turn reads it when it starts (and keeps it in its turn record to its end);
  ``newConversation`` replaces it, so the user's next turn, on whichever connection, starts a conversation the
  agent has no history of.
- ``rate#<user id>#<minute>``: see :mod:`relay_functions.gateway.rate_limit`.

Every write that decides something (claiming the connection for a turn) is one conditional DynamoDB write, so
two Lambdas racing on the same connection cannot both win.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from relay_core.agent.conversation_ids import new_session_id
from relay_functions.gateway.clock import SYSTEM_CLOCK, Clock

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

CONVERSATION_TTL_S = 7 * 24 * 3600
"""A conversation (AgentCore session id) is forgotten a week after its user's last connection or turn."""
MAX_TURN_S = 15 * 60
"""A turn's claim on its connection lapses after this long (Lambda's maximum run time), so a relay that died
without releasing it cannot block the connection for ever."""


@dataclass(frozen=True, slots=True)
class Connection:
    connection_id: str
    user_id: str
    session_id: str
    """The user's conversation when the connection was made; a turn takes the current one
    (:meth:`ConnectionStore.conversation_session`), which ``newConversation`` may have replaced since."""
    connected_at: float
    active_turn: str | None = None


class ConnectionNotRegisteredError(LookupError):
    """The connection is not in the table: it never completed ``$connect``, or it is gone."""


def is_conditional_failure(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


class ConnectionStore:
    """Reads and writes the connections table."""

    def __init__(self, client: DynamoDBClient, table: str, *, ttl_s: int, clock: Clock = SYSTEM_CLOCK) -> None:
        self._db = client
        self._table = table
        self._ttl_s = ttl_s
        self._clock = clock

    # --- conversations -----------------------------------------------------------------------------------
    def conversation_session(self, user_id: str) -> str:
        """The user's current AgentCore session id, created on first use and kept alive by each call (a write that
        answers the item as written, so never an older id than the latest :meth:`new_conversation_session`'s)."""
        now = self._clock.now()
        response = self._db.update_item(
            TableName=self._table,
            Key={"pk": {"S": conversation_key(user_id)}},
            UpdateExpression="SET session_id = if_not_exists(session_id, :new), expires_at = :exp",
            ExpressionAttributeValues={
                ":new": {"S": new_session_id(user_id)},
                ":exp": {"N": str(int(now) + CONVERSATION_TTL_S)},
            },
            ReturnValues="ALL_NEW",
        )
        return response["Attributes"]["session_id"]["S"]

    def new_conversation_session(self, user_id: str) -> str:
        """Replace the user's AgentCore session id with a fresh one and return it: every turn that starts after this
        write, on any connection of the user, is in the new conversation (turns already running keep theirs)."""
        now = self._clock.now()
        session_id = new_session_id(user_id)
        self._db.update_item(
            TableName=self._table,
            Key={"pk": {"S": conversation_key(user_id)}},
            UpdateExpression="SET session_id = :new, expires_at = :exp",
            ExpressionAttributeValues={
                ":new": {"S": session_id},
                ":exp": {"N": str(int(now) + CONVERSATION_TTL_S)},
            },
        )
        return session_id

    # --- connections -------------------------------------------------------------------------------------
    def put(self, connection_id: str, *, user_id: str, session_id: str) -> Connection:
        now = self._clock.now()
        self._db.put_item(
            TableName=self._table,
            Item={
                "pk": {"S": connection_key(connection_id)},
                "user_id": {"S": user_id},
                "session_id": {"S": session_id},
                "connected_at": {"N": _num(now)},
                "expires_at": {"N": str(int(now) + self._ttl_s)},
            },
        )
        return Connection(connection_id, user_id, session_id, now)

    def get(self, connection_id: str) -> Connection | None:
        item = self._db.get_item(
            TableName=self._table, Key={"pk": {"S": connection_key(connection_id)}}, ConsistentRead=True
        )
        attrs = item.get("Item")
        if not attrs:
            return None
        connection = _connection(connection_id, attrs)
        lapses_at = float(attrs.get("active_turn_expires", {}).get("N", "0"))
        if connection.active_turn is not None and lapses_at < self._clock.now():
            return dataclasses.replace(connection, active_turn=None)
        return connection

    def delete(self, connection_id: str) -> Connection | None:
        """Forget a connection; what it was, or None if it was unknown."""
        response = self._db.delete_item(
            TableName=self._table, Key={"pk": {"S": connection_key(connection_id)}}, ReturnValues="ALL_OLD"
        )
        attrs: dict[str, Any] = dict(response.get("Attributes") or {})
        if not attrs:
            return None
        return _connection(connection_id, attrs)

    def claim_turn(self, connection_id: str, turn_id: str, *, reclaim: bool = False) -> bool:
        """Mark ``turn_id`` as the connection's running turn; False when another turn already runs on it (or the
        connection is gone). ``reclaim``: also succeed when ``turn_id`` itself already runs there (a resume on the
        same connection)."""
        try:
            self._claim(connection_id, turn_id, reclaim=reclaim)
        except ClientError as exc:
            if is_conditional_failure(exc):
                return False
            raise
        return True

    def claim_new_turn(self, connection_id: str, turn_id: str) -> Connection | None:
        """:meth:`claim_turn` and the read of the connection in one conditional write (no read before it): the
        connection as it is with ``turn_id`` claimed, or None when another turn already runs on it. Raises
        :class:`ConnectionNotRegisteredError` when the connection is not recorded (it never connected, or it is
        gone)."""
        try:
            response = self._claim(
                connection_id, turn_id, ReturnValues="ALL_NEW", ReturnValuesOnConditionCheckFailure="ALL_OLD"
            )
        except ClientError as exc:
            if not is_conditional_failure(exc):
                raise
            old: Mapping[str, Any] = exc.response  # with ALL_OLD, a failed condition answers the item as it was
            if not old.get("Item"):
                raise ConnectionNotRegisteredError(connection_id) from exc
            return None
        return _connection(connection_id, response["Attributes"])

    def _claim(self, connection_id: str, turn_id: str, *, reclaim: bool = False, **returns: str) -> Any:
        now = self._clock.now()
        same_turn = " OR active_turn = :t" if reclaim else ""
        return self._db.update_item(
            TableName=self._table,
            Key={"pk": {"S": connection_key(connection_id)}},
            UpdateExpression="SET active_turn = :t, active_turn_expires = :exp",
            ConditionExpression=(
                f"attribute_exists(pk) AND (attribute_not_exists(active_turn) OR active_turn_expires < :now{same_turn})"
            ),
            ExpressionAttributeValues={
                ":t": {"S": turn_id},
                ":exp": {"N": _num(now + MAX_TURN_S)},
                ":now": {"N": _num(now)},
            },
            **returns,  # type: ignore[arg-type]
        )

    def release_turn(self, connection_id: str, turn_id: str) -> None:
        """Clear the connection's running turn if it is still ``turn_id`` (idempotent)."""
        try:
            self._db.update_item(
                TableName=self._table,
                Key={"pk": {"S": connection_key(connection_id)}},
                UpdateExpression="REMOVE active_turn, active_turn_expires",
                ConditionExpression="active_turn = :t",
                ExpressionAttributeValues={":t": {"S": turn_id}},
            )
        except ClientError as exc:
            if not is_conditional_failure(exc):
                raise


def _connection(connection_id: str, attrs: Mapping[str, Any]) -> Connection:
    return Connection(
        connection_id=connection_id,
        user_id=attrs["user_id"]["S"],
        session_id=attrs["session_id"]["S"],
        connected_at=float(attrs["connected_at"]["N"]),
        active_turn=attrs.get("active_turn", {}).get("S"),
    )


CONNECTION_KEY_PREFIX = "conn#"


def connection_key(connection_id: str) -> str:
    """The ``pk`` of a connection's item."""
    return f"{CONNECTION_KEY_PREFIX}{connection_id}"


def conversation_key(user_id: str) -> str:
    """The ``pk`` of a user's conversation item."""
    return f"conversation#{user_id}"


def _num(value: float) -> str:
    return f"{value:.3f}"
