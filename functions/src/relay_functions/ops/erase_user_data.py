"""Lambda task ``relay_functions.ops.erase_user_data.handler``: erase one user's stored data (workflow ``erase_user``).

What one user leaves stored, and how each is found (docs/operations.md, "Erasing a user"):

- their conversations in the history bucket: every one the gateway made since conversation ids carry the user's key
  is under one key prefix (:func:`relay_core.agent.conversation_ids.user_history_prefix`); a conversation whose id
  predates that format is found by its id where an item below still names it;
- in the connections table: ``conversation#<user>`` (their current conversation), ``rate#<user>#<minute>`` (turn
  counters) and ``conn#<connection>`` items whose ``user_id`` is theirs (a scan with a filter: the table is keyed by
  ``pk`` only and holds short-lived items, so it is small);
- in the turns table: the records of their turns (``user_id`` is theirs; a scan with a filter, as above).

Each call lists and deletes the history first, at most ``max_batches`` batches of 1000 keys, and answers
``done: false`` while some is left (the workflow calls again, with the previous answer as ``progress``, whose
counts are added to); once the history is gone it deletes the table items and answers ``done: true``. The table
items go last so that a run that failed half-way still finds, when run again, the old-format conversations they
name. Input ``{"request": {"user_id"}, "progress"?, "history_bucket", "connections_table", "turns_table",
"max_batches"?}``; output :class:`Erasure` as JSON.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import boto3
from aws_lambda_powertools import Logger
from botocore.exceptions import ClientError

from relay_core.agent.conversation_ids import (
    SESSION_ID_PREFIX,
    session_history_prefix,
    user_history_prefix,
    user_key,
)
from relay_core.agent.defaults import HISTORY_PREFIX
from relay_core.relay.turn_record import TurnState
from relay_functions.gateway.connections import CONNECTION_KEY_PREFIX, MAX_TURN_S, conversation_key
from relay_functions.gateway.rate_limit import rate_key_prefix
from relay_functions.ops.errors import DeleteRefusedError, InvalidTaskInputError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

logger = Logger(service="relay-ops")
BATCH: Final = 1000
"""Keys per ``DeleteObjects`` call (S3's maximum)."""
DEFAULT_MAX_BATCHES: Final = 50
"""Batches one call deletes at most (50,000 keys: well inside the function's 5 minutes)."""
SESSION_FILE: Final = "session.json"
"""The one object Strands writes per conversation (its ``session.json``): what :attr:`Erasure.conversations`
counts."""


@dataclass(frozen=True, slots=True)
class EraseTargets:
    """Where the user's data is kept (the deployment's resources)."""

    history_bucket: str
    connections_table: str
    turns_table: str
    history_prefix: str = HISTORY_PREFIX


@dataclass(frozen=True, slots=True)
class Erasure:
    """What has been erased of one user so far (counts added up over the workflow's calls)."""

    user_key: str
    """The user's key in conversation ids (never the user id itself)."""
    done: bool = False
    """Everything found is deleted."""
    history_objects: int = 0
    """Objects deleted from the history bucket."""
    conversations: int = 0
    """Conversations among them (each has one ``session.json``)."""
    conversation_items: int = 0
    """``conversation#<user>`` items deleted (0 or 1)."""
    rate_items: int = 0
    """``rate#<user>#<minute>`` items deleted."""
    connection_items: int = 0
    """``conn#<connection>`` items of the user deleted (open connections of the user can start no more turns)."""
    turn_records: int = 0
    """Turn records of the user deleted."""
    running_turns: int = 0
    """Of those, turns still running when they were deleted: such a turn may yet store its reply; erase again once
    it has ended (at most :data:`~relay_functions.gateway.connections.MAX_TURN_S`)."""
    calls: int = 0

    @property
    def found(self) -> bool:
        """Whether anything of the user was stored."""
        return any(
            (
                self.history_objects,
                self.conversation_items,
                self.rate_items,
                self.connection_items,
                self.turn_records,
            )
        )

    def summary(self) -> str:
        """One line for the operator."""
        if not self.done:
            return f"user {self.user_key}: {self.history_objects} history objects deleted so far; more to delete"
        if not self.found:
            return f"user {self.user_key}: nothing stored for this user id (is it the token's subject?): erased nothing"
        running = (
            f"; {self.running_turns} turn(s) were running: erase again in {MAX_TURN_S // 60} minutes"
            if self.running_turns
            else ""
        )
        return (
            f"user {self.user_key}: erased {self.conversations} conversation(s) ({self.history_objects} objects), "
            f"{self.connection_items} connection(s), {self.turn_records} turn record(s), "
            f"{self.conversation_items + self.rate_items} other item(s){running}"
        )

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "found": self.found, "summary": self.summary()}

    @classmethod
    def from_json(cls, user_key: str, data: Mapping[str, Any]) -> Erasure:
        """The counts of a previous call's answer (``{}``: none yet)."""
        counts: dict[str, Any] = {
            f.name: int(data.get(f.name, 0)) for f in dataclasses.fields(cls) if f.name not in _NOT_COUNTS
        }
        return cls(user_key=user_key, **counts)


_NOT_COUNTS: Final = frozenset({"user_key", "done"})


@dataclass(frozen=True, slots=True)
class StoredItem:
    """One table item of the user: its key, and the conversation it names (if any)."""

    pk: str
    kind: str
    """``conversation``, ``rate``, ``connection`` or ``turn``."""
    session_id: str | None = None
    running: bool = False


def _scan(db: DynamoDBClient, table: str, **query: Any) -> Iterator[dict[str, Any]]:
    for page in db.get_paginator("scan").paginate(TableName=table, ConsistentRead=True, **query):
        yield from page.get("Items", [])


def connection_items(db: DynamoDBClient, table: str, user_id: str) -> list[StoredItem]:
    """The user's items in the connections table: ``conversation#<user>``, ``rate#<user>#<minute>`` and
    ``conn#...`` with their ``user_id`` (exact matches only: another user whose id begins with this one's is never
    taken)."""
    conversation, rate = conversation_key(user_id), rate_key_prefix(user_id)
    found: list[StoredItem] = []
    for item in _scan(
        db,
        table,
        FilterExpression="user_id = :u OR pk = :c OR begins_with(pk, :r)",
        ProjectionExpression="pk, user_id, session_id",
        ExpressionAttributeValues={":u": {"S": user_id}, ":c": {"S": conversation}, ":r": {"S": rate}},
    ):
        pk = item["pk"]["S"]
        session_id = item.get("session_id", {}).get("S")
        if pk == conversation:
            found.append(StoredItem(pk, "conversation", session_id))
        elif pk.startswith(rate) and pk.removeprefix(rate).isdigit():
            found.append(StoredItem(pk, "rate"))
        elif pk.startswith(CONNECTION_KEY_PREFIX) and item.get("user_id", {}).get("S") == user_id:
            found.append(StoredItem(pk, "connection", session_id))
    return found


def turn_items(db: DynamoDBClient, table: str, user_id: str) -> list[StoredItem]:
    """The records of the user's turns in the turns table."""
    return [
        StoredItem(
            item["pk"]["S"],
            "turn",
            item.get("session_id", {}).get("S"),
            running=item.get("state", {}).get("S") == TurnState.RUNNING.value,
        )
        for item in _scan(
            db,
            table,
            FilterExpression="user_id = :u",
            ProjectionExpression="pk, session_id, #state",
            ExpressionAttributeNames={"#state": "state"},
            ExpressionAttributeValues={":u": {"S": user_id}},
        )
    ]


def history_prefixes(user_id: str, items: list[StoredItem], history_prefix: str = HISTORY_PREFIX) -> list[str]:
    """Where the user's conversations are kept: the user's prefix, and the folder of each conversation an item names
    that is not under it (an id made before ids carried the user's key; only ids the gateway made are taken)."""
    mine = user_history_prefix(user_id, history_prefix)
    prefixes = [mine]
    for item in items:
        sid = item.session_id
        if sid and sid.startswith(SESSION_ID_PREFIX) and "/" not in sid:
            folder = session_history_prefix(sid, history_prefix)
            if not folder.startswith(mine) and folder not in prefixes:
                prefixes.append(folder)
    return prefixes


def delete_history(s3: S3Client, bucket: str, prefixes: list[str], *, max_batches: int) -> tuple[int, int, bool]:
    """Delete every object under ``prefixes``, at most ``max_batches`` batches: (objects deleted, conversations
    among them, whether nothing is left)."""
    deleted = conversations = batches = 0
    try:
        for prefix in prefixes:
            while True:
                page = s3.list_objects_v2(Bucket=bucket, Prefix=prefix, MaxKeys=BATCH)
                keys = [obj["Key"] for obj in page.get("Contents", [])]
                if not keys:
                    break
                if batches == max_batches:
                    return deleted, conversations, False
                answer = s3.delete_objects(
                    Bucket=bucket, Delete={"Objects": [{"Key": key} for key in keys], "Quiet": True}
                )
                if answer.get("Errors"):
                    first = answer["Errors"][0]
                    raise DeleteRefusedError(
                        f"S3 refused to delete {len(answer['Errors'])} object(s) of s3://{bucket}/{prefix}, e.g. "
                        f"{first.get('Key')}: {first.get('Code')}: {first.get('Message')}; run the erase again"
                    )
                batches += 1
                deleted += len(keys)
                conversations += sum(1 for key in keys if key.endswith(f"/{SESSION_FILE}"))
    except ClientError as exc:
        error = exc.response.get("Error", {})
        raise DeleteRefusedError(
            f"S3 refused to list or delete the user's conversations in {bucket}: {error.get('Code')}: "
            f"{error.get('Message')}"
        ) from exc
    return deleted, conversations, True


def _delete_items(db: DynamoDBClient, table: str, items: list[StoredItem]) -> None:
    try:
        for item in items:
            db.delete_item(TableName=table, Key={"pk": {"S": item.pk}})
    except ClientError as exc:
        error = exc.response.get("Error", {})
        raise DeleteRefusedError(
            f"DynamoDB refused to delete the user's items in {table}: {error.get('Code')}: {error.get('Message')}; "
            "run the erase again"
        ) from exc


def erase_user(
    s3: S3Client,
    db: DynamoDBClient,
    targets: EraseTargets,
    user_id: str,
    *,
    progress: Mapping[str, Any] | None = None,
    max_batches: int = DEFAULT_MAX_BATCHES,
) -> Erasure:
    """Delete up to ``max_batches`` batches of the user's stored conversations and, once none is left, their items
    in both tables. ``progress``: the previous call's answer (its counts are added to). Idempotent: a call after
    ``done`` finds nothing more."""
    so_far = Erasure.from_json(user_key(user_id), progress or {})
    in_connections = connection_items(db, targets.connections_table, user_id)
    turns = turn_items(db, targets.turns_table, user_id)
    prefixes = history_prefixes(user_id, [*in_connections, *turns], targets.history_prefix)
    deleted, conversations, history_done = delete_history(s3, targets.history_bucket, prefixes, max_batches=max_batches)
    erasure = dataclasses.replace(
        so_far,
        history_objects=so_far.history_objects + deleted,
        conversations=so_far.conversations + conversations,
        calls=so_far.calls + 1,
    )
    if not history_done:
        return erasure
    _delete_items(db, targets.turns_table, turns)
    _delete_items(db, targets.connections_table, in_connections)

    def count(kind: str) -> int:
        return sum(1 for item in [*in_connections, *turns] if item.kind == kind)

    return dataclasses.replace(
        erasure,
        done=True,
        conversation_items=erasure.conversation_items + count("conversation"),
        rate_items=erasure.rate_items + count("rate"),
        connection_items=erasure.connection_items + count("connection"),
        turn_records=erasure.turn_records + count("turn"),
        running_turns=erasure.running_turns + sum(1 for t in turns if t.running),
    )


def _text(event: Mapping[str, Any], name: str, what: str) -> str:
    value = event.get(name)
    if not isinstance(value, str) or not value:
        raise InvalidTaskInputError(f"give '{name}', {what}")
    return value


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    request = event.get("request")
    if not isinstance(request, dict):
        raise InvalidTaskInputError('give the workflow {"user_id": "<the user\'s id, the subject of their token>"}')
    user_id = _text(request, "user_id", "the id of the user to erase (the subject of their token)")
    targets = EraseTargets(
        history_bucket=_text(event, "history_bucket", "the conversation-history bucket name"),
        connections_table=_text(event, "connections_table", "the connections table name"),
        turns_table=_text(event, "turns_table", "the turns table name"),
    )
    progress = event.get("progress")
    erasure = erase_user(
        boto3.client("s3"),
        boto3.client("dynamodb"),
        targets,
        user_id,
        progress=progress if isinstance(progress, dict) else None,
        max_batches=int(event.get("max_batches", DEFAULT_MAX_BATCHES)),
    )
    result = erasure.to_json()
    logger.info("erase user", **result)  # the user's key, never the user id
    return result


__all__ = [
    "EraseTargets",
    "Erasure",
    "StoredItem",
    "connection_items",
    "delete_history",
    "erase_user",
    "handler",
    "history_prefixes",
    "turn_items",
]
