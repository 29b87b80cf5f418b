"""What a user of the relay leaves stored, written by the real writers: for the erase-user workflow's local run
(``relay ops erase-user --local``) and its tests.

:func:`create_gateway_tables` makes the gateway's two tables; :func:`seed_user` then does what a user's use of the
relay stores: a connection (``$connect``), each conversation's turn (a counter and a turn record, by the gateway's
own stores) and the conversation's history (Strands' ``S3SessionManager`` writing its own layout: ``session.json``,
the agent and its messages); after the first conversation, ``newConversation`` starts the next.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from strands.session.s3_session_manager import S3SessionManager
from strands.types.session import SessionAgent, SessionMessage

from relay_core.agent.defaults import HISTORY_AGENT_ID, HISTORY_PREFIX
from relay_core.relay.turn_record import RelayOutcome
from relay_functions.gateway.connections import ConnectionStore
from relay_functions.gateway.rate_limit import TurnRateLimiter
from relay_functions.gateway.settings import DEFAULT_CONNECTION_TTL_S
from relay_functions.gateway.turns import TurnStore
from relay_local.moto_dynamodb import PARTITION_KEY

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

TURNS_PER_MINUTE = 10


@dataclass(frozen=True, slots=True)
class StoredUser:
    """What :func:`seed_user` stored for one user."""

    user_id: str
    connection_id: str
    session_ids: tuple[str, ...]
    """The user's conversations, oldest first (the last is the current one)."""
    turn_ids: tuple[str, ...]


def create_gateway_tables(db: DynamoDBClient, *tables: str) -> None:
    """The gateway's tables as the CDK app makes them (partition key ``pk``, on-demand)."""
    for table in tables:
        db.create_table(
            TableName=table,
            KeySchema=[{"AttributeName": PARTITION_KEY, "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": PARTITION_KEY, "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )


def store_conversation(
    session_id: str, *, bucket: str, prompt: str, reply: str, endpoint_url: str | None = None
) -> None:
    """One exchange of a conversation in the history bucket, written by Strands' ``S3SessionManager`` as the agent
    writes it (under :data:`HISTORY_PREFIX`, agent :data:`HISTORY_AGENT_ID`)."""
    manager = S3SessionManager(session_id=session_id, bucket=bucket, prefix=HISTORY_PREFIX, endpoint_url=endpoint_url)
    manager.create_agent(session_id, SessionAgent(agent_id=HISTORY_AGENT_ID, state={}, conversation_manager_state={}))
    for index, (role, text) in enumerate((("user", prompt), ("assistant", reply))):
        message = SessionMessage(message={"role": role, "content": [{"text": text}]}, message_id=index)  # type: ignore[typeddict-item]
        manager.create_message(session_id, HISTORY_AGENT_ID, message)


def seed_user(
    user_id: str,
    db: DynamoDBClient,
    *,
    bucket: str,
    connections_table: str,
    turns_table: str,
    conversations: int = 2,
    endpoint_url: str | None = None,
) -> StoredUser:
    """Store what a user who connected once and held ``conversations`` conversations (one turn each, run to its
    end; a ``newConversation`` between them) leaves behind. The connection stays open."""
    connections = ConnectionStore(db, connections_table, ttl_s=DEFAULT_CONNECTION_TTL_S)
    turns = TurnStore(db, turns_table)
    limiter = TurnRateLimiter(db, connections_table, turns_per_minute=TURNS_PER_MINUTE)
    connection_id = f"conn-{uuid.uuid4().hex[:12]}"
    session_id = connections.conversation_session(user_id)
    connections.put(connection_id, user_id=user_id, session_id=session_id)
    session_ids: list[str] = []
    turn_ids: list[str] = []
    for number in range(conversations):
        if number:
            session_id = connections.new_conversation_session(user_id)
        assert limiter.try_acquire(user_id).allowed
        turn_id = f"turn-{uuid.uuid4().hex[:12]}"
        turns.create(turn_id, user_id=user_id, session_id=session_id, connection_id=connection_id)
        assert turns.claim_relay(turn_id)
        store_conversation(
            session_id,
            bucket=bucket,
            prompt=f"Conversation {number + 1} of {user_id}.",
            reply="Noted.",
            endpoint_url=endpoint_url,
        )
        turns.end(turn_id, outcome=RelayOutcome.COMPLETED)
        assert turns.close(turn_id, seen_resume_count=0)
        session_ids.append(session_id)
        turn_ids.append(turn_id)
    return StoredUser(user_id, connection_id, tuple(session_ids), tuple(turn_ids))


__all__ = ["StoredUser", "create_gateway_tables", "seed_user", "store_conversation"]
