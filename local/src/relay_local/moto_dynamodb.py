"""DynamoDB for the local stack: moto's ``ThreadedMotoServer`` over real HTTP on a loopback port, with the two
tables the gateway functions use (partition key ``pk`` (S), TTL on ``expires_at``).

DynamoDB applies one conditional write to an item at a time; moto checks a write's condition and then applies it
with no lock, so two requests on two server threads (a resume and the relay's close of the same turn, each
conditional on the other not having happened) could both succeed. The local stack's moto applies one request at a
time (:func:`one_request_at_a_time`), as DynamoDB would order them; the gateway tests wrap in-process moto the same
way."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import boto3
from moto.dynamodb.responses import DynamoHandler
from moto.server import ThreadedMotoServer

from relay_local.aws.account import LOCAL_REGION

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

PARTITION_KEY = "pk"
TTL_ATTRIBUTE = "expires_at"

_ONE_REQUEST = threading.Lock()


def one_request_at_a_time(call_action: Callable[[DynamoHandler], Any]) -> Callable[[DynamoHandler], Any]:
    """moto's DynamoDB request handler (``DynamoHandler.call_action``) applying one request at a time, process-wide."""
    if getattr(call_action, "one_at_a_time", False):
        return call_action

    @functools.wraps(call_action)
    def serialized(handler: DynamoHandler) -> Any:
        with _ONE_REQUEST:
            return call_action(handler)

    serialized.one_at_a_time = True  # type: ignore[attr-defined]
    return serialized


class LocalDynamoDb:
    """``start()`` serves moto on ``127.0.0.1:port`` (0 = a free port) and creates ``tables``; ``stop()`` deletes
    them and ends the server. moto's backend is process-wide: deleting the tables leaves it as it was found, so a
    stack started later in the same process (a test suite, ``relay chat --local`` twice) starts clean."""

    def __init__(self, tables: tuple[str, ...], *, port: int = 0) -> None:
        self.tables = tables
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        self.endpoint_url = ""
        self._client: DynamoDBClient | None = None

    def start(self) -> LocalDynamoDb:
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's per-request access log
        DynamoHandler.call_action = one_request_at_a_time(DynamoHandler.call_action)  # type: ignore[method-assign]
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint_url = f"http://{host}:{port}"
        self._client = client = boto3.client(
            "dynamodb",
            endpoint_url=self.endpoint_url,
            region_name=LOCAL_REGION,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",  # noqa: S106 - moto dummy credentials
        )
        for name in self.tables:
            client.create_table(
                TableName=name,
                KeySchema=[{"AttributeName": PARTITION_KEY, "KeyType": "HASH"}],
                AttributeDefinitions=[{"AttributeName": PARTITION_KEY, "AttributeType": "S"}],
                BillingMode="PAY_PER_REQUEST",
            )
            client.update_time_to_live(
                TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE}
            )
        return self

    def stop(self) -> None:
        if not self.endpoint_url:
            return
        if self._client is not None:
            for name in self.tables:
                try:
                    self._client.delete_table(TableName=name)
                except self._client.exceptions.ResourceNotFoundException:
                    continue  # start() failed before creating it
            self._client = None
        self._server.stop()
        self.endpoint_url = ""


__all__ = ["PARTITION_KEY", "TTL_ATTRIBUTE", "LocalDynamoDb", "one_request_at_a_time"]
