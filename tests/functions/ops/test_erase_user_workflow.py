"""Erasing one user: the erase-user workflow executed under moto with the real task function, over a history bucket
written by Strands' ``S3SessionManager`` and tables written by the gateway's own stores. Two users with two
conversations each (one before a ``newConversation``): erasing one deletes all of that user's objects and items
and none of the other's; an unknown user erases nothing and says so; a bounded call leaves the rest for the next."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from strands.session.s3_session_manager import S3SessionManager

from relay_core.agent.conversation_ids import SESSION_ID_PREFIX, session_history_prefix, user_history_prefix
from relay_core.agent.defaults import HISTORY_PREFIX
from relay_functions.gateway.turns import TurnStore
from relay_functions.ops import erase_user_data
from relay_functions.ops.errors import InvalidTaskInputError
from relay_local.ops_workflows import REGION, InProcessLambdas, run_workflow
from relay_local.user_data import StoredUser, create_gateway_tables, seed_user, store_conversation

from .conftest import TEST_VALUES

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

BUCKET = TEST_VALUES["HistoryBucketName"]
CONNECTIONS = TEST_VALUES["ConnectionsTableName"]
TURNS = TEST_VALUES["TurnsTableName"]
ALICE, BOB = "3f1c9a52-alice", "3f1c9a52-alice-bob"
"""Bob's id begins with Alice's: erasing Alice must still leave every item of Bob's."""
LEGACY_ALICE = SESSION_ID_PREFIX + "a1" * 16
"""A conversation of Alice's whose id predates ids that carry the user's key (a turn record names it)."""
LEGACY_NOBODY = SESSION_ID_PREFIX + "b2" * 16


@pytest.fixture
def s3(aws: None) -> S3Client:
    client = boto3.client("s3", region_name=REGION)
    client.create_bucket(Bucket=BUCKET)
    return client


@pytest.fixture
def db(aws: None) -> DynamoDBClient:
    client = boto3.client("dynamodb", region_name=REGION)
    create_gateway_tables(client, CONNECTIONS, TURNS)
    return client


@pytest.fixture
def users(s3: S3Client, db: DynamoDBClient) -> dict[str, StoredUser]:
    stored = {
        user: seed_user(user, db, bucket=BUCKET, connections_table=CONNECTIONS, turns_table=TURNS)
        for user in (ALICE, BOB)
    }
    for session_id in (LEGACY_ALICE, LEGACY_NOBODY):
        store_conversation(session_id, bucket=BUCKET, prompt="From before.", reply="Yes.")
    TurnStore(db, TURNS).create("turn-legacy", user_id=ALICE, session_id=LEGACY_ALICE, connection_id="conn-old")
    return stored


def keys(s3: S3Client, prefix: str = "") -> set[str]:
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return {obj["Key"] for page in pages for obj in page.get("Contents", [])}


def table_keys(db: DynamoDBClient, table: str) -> set[str]:
    pages = db.get_paginator("scan").paginate(TableName=table)
    return {item["pk"]["S"] for page in pages for item in page.get("Items", [])}


def erase(definition: Callable[..., str], user_id: str) -> Any:
    run = run_workflow(definition("erase_user"), {"user_id": user_id})
    assert run.status == "SUCCEEDED", (run.error, run.cause)
    assert run.states[0] == "Begin" and run.states[-1] == "Report"
    return run


def test_history_is_where_strands_keeps_it_under_the_users_prefix(users: dict[str, StoredUser], s3: S3Client) -> None:
    for session_id in users[ALICE].session_ids:
        manager = S3SessionManager(session_id=session_id, bucket=BUCKET, prefix=HISTORY_PREFIX)
        assert manager._get_session_path(session_id) == session_history_prefix(session_id)
        assert keys(s3, session_history_prefix(session_id)), "Strands wrote the conversation there"
    assert len({k.split("/")[1] for k in keys(s3, user_history_prefix(ALICE))}) == 2
    assert not keys(s3, user_history_prefix(ALICE)) & keys(s3, user_history_prefix(BOB))


def test_erasing_a_user_deletes_all_of_theirs_and_none_of_anyone_elses(
    users: dict[str, StoredUser],
    s3: S3Client,
    db: DynamoDBClient,
    lambdas: InProcessLambdas,
    definition: Callable[..., str],
) -> None:
    bob = users[BOB]
    bob_objects = keys(s3, user_history_prefix(BOB))
    nobody = keys(s3, session_history_prefix(LEGACY_NOBODY))
    bob_items = {k for k in table_keys(db, CONNECTIONS) if BOB in k or k == f"conn#{bob.connection_id}"}
    assert len(bob_items) == 3  # conversation#, rate#, conn#
    alice_objects = keys(s3, user_history_prefix(ALICE)) | keys(s3, session_history_prefix(LEGACY_ALICE))

    report = erase(definition, ALICE).output

    assert keys(s3) == bob_objects | nobody, "every object of Alice's is gone, every other one is kept"
    assert table_keys(db, CONNECTIONS) == bob_items
    assert table_keys(db, TURNS) == set(bob.turn_ids)
    assert report["done"] is True and report["found"] is True
    assert report["history_objects"] == len(alice_objects)
    assert report["conversations"] == 3  # two with her key, one from before the format
    assert (report["conversation_items"], report["rate_items"], report["connection_items"]) == (1, 1, 1)
    assert report["turn_records"] == 3 and report["running_turns"] == 1, "the old-format turn was left running"
    assert ALICE not in str(report), "the report names the user by key, never by id"
    assert "erase again" in report["summary"]


def test_an_unknown_user_erases_nothing_and_says_so(
    users: dict[str, StoredUser],
    s3: S3Client,
    db: DynamoDBClient,
    lambdas: InProcessLambdas,
    definition: Callable[..., str],
) -> None:
    before = keys(s3), table_keys(db, CONNECTIONS), table_keys(db, TURNS)
    report = erase(definition, "nobody-we-know").output
    assert (keys(s3), table_keys(db, CONNECTIONS), table_keys(db, TURNS)) == before
    assert report["done"] is True and report["found"] is False and report["history_objects"] == 0
    assert "erased nothing" in report["summary"]


def test_a_bounded_call_leaves_the_rest_and_the_items_for_the_next(
    users: dict[str, StoredUser], s3: S3Client, db: DynamoDBClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(erase_user_data, "BATCH", 2)
    targets = erase_user_data.EraseTargets(BUCKET, CONNECTIONS, TURNS)
    total = len(keys(s3, user_history_prefix(ALICE))) + len(keys(s3, session_history_prefix(LEGACY_ALICE)))
    first = erase_user_data.erase_user(s3, db, targets, ALICE, max_batches=1)
    assert not first.done and first.history_objects == 2
    assert f"conversation#{ALICE}" in table_keys(db, CONNECTIONS), "items stay until the history is gone"
    assert "turn-legacy" in table_keys(db, TURNS), "and with them the old-format conversation they name"
    progress = first.to_json()
    while not progress["done"]:
        progress = erase_user_data.erase_user(s3, db, targets, ALICE, progress=progress, max_batches=1).to_json()
    assert not keys(s3, user_history_prefix(ALICE)) and not keys(s3, session_history_prefix(LEGACY_ALICE))
    assert progress["history_objects"] == total and progress["conversations"] == 3
    assert progress["calls"] > 2 and progress["turn_records"] == 3
    again = erase_user_data.erase_user(s3, db, targets, ALICE)
    assert again.done and not again.found, "a second erase finds nothing more"


def test_the_workflow_calls_again_until_done(
    users: dict[str, StoredUser],
    s3: S3Client,
    lambdas: InProcessLambdas,
    definition: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(erase_user_data, "DEFAULT_MAX_BATCHES", 1)
    monkeypatch.setattr(erase_user_data, "BATCH", 2)
    total = len(keys(s3, user_history_prefix(ALICE))) + len(keys(s3, session_history_prefix(LEGACY_ALICE)))
    run = erase(definition, ALICE)
    assert run.states.count("Continue") >= 2
    assert run.output["history_objects"] == total and run.output["calls"] == run.states.count("Erase")
    assert not keys(s3, user_history_prefix(ALICE))


def test_a_request_without_a_user_id_fails_naming_it(
    aws: None, lambdas: InProcessLambdas, definition: Callable[..., str]
) -> None:
    run = run_workflow(definition("erase_user"), {"user": "typo"})
    assert run.status == "FAILED" and run.error == "EraseUser.Failed"
    assert "user_id" in str(run.cause) and InvalidTaskInputError.__name__ in str(run.cause)
