"""The local stack's DynamoDB: moto over real HTTP with the gateway's tables, and nothing left behind on stop
(moto's backend is process-wide, so a second stack in the same process must start clean)."""

from __future__ import annotations

import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import boto3

from relay_local.aws.account import LOCAL_REGION
from relay_local.moto_dynamodb import TTL_ATTRIBUTE, LocalDynamoDb

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

TABLES = ("test-moto-connections", "test-moto-turns")


def _client(db: LocalDynamoDb) -> DynamoDBClient:
    return boto3.client(
        "dynamodb",
        endpoint_url=db.endpoint_url,
        region_name=LOCAL_REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def test_tables_are_served_over_http_and_gone_after_stop_so_a_second_start_is_clean() -> None:
    first = LocalDynamoDb(TABLES).start()
    try:
        client = _client(first)
        assert set(TABLES) <= set(client.list_tables()["TableNames"])
        ttl = client.describe_time_to_live(TableName=TABLES[0])["TimeToLiveDescription"]
        assert ttl["AttributeName"] == TTL_ATTRIBUTE and ttl["TimeToLiveStatus"] == "ENABLED"
        client.put_item(TableName=TABLES[0], Item={"pk": {"S": "conn-1"}})
    finally:
        first.stop()
    second = LocalDynamoDb(TABLES).start()  # the same table names in the same process: no "already exists"
    try:
        client = _client(second)
        assert client.scan(TableName=TABLES[0])["Items"] == []  # nothing carried over from the first stack
    finally:
        second.stop()
    second.stop()  # idempotent


def test_conditional_writes_racing_on_one_item_are_applied_one_at_a_time() -> None:
    """Like DynamoDB: of many clients claiming one item at once, each only if nobody has, exactly one wins (moto alone
    checks every condition against the old item and lets several win)."""
    db = LocalDynamoDb(TABLES).start()
    previous_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # interleave the server's threads as finely as possible
    try:
        clients = [_client(db) for _ in range(8)]
        for round_number in range(10):
            key = {"pk": {"S": f"turn-{round_number}"}}
            start = threading.Barrier(len(clients))

            def claim(client: DynamoDBClient, me: str, key: dict[str, Any] = key, start: Any = start) -> bool:
                start.wait(timeout=60)
                try:
                    client.update_item(
                        TableName=TABLES[1],
                        Key=key,
                        UpdateExpression="SET claimed_by = :me",
                        ConditionExpression="attribute_not_exists(claimed_by)",
                        ExpressionAttributeValues={":me": {"S": me}},
                    )
                except client.exceptions.ConditionalCheckFailedException:
                    return False
                return True

            with ThreadPoolExecutor(len(clients)) as pool:
                won = list(pool.map(claim, clients, [f"c{i}" for i in range(len(clients))]))
            assert won.count(True) == 1, f"round {round_number}: {won.count(True)} clients claimed one item"
    finally:
        sys.setswitchinterval(previous_interval)
        db.stop()
