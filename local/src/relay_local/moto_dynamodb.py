"""DynamoDB for the local stack: moto's ``ThreadedMotoServer`` over real HTTP on a loopback port, with the two
tables the gateway functions use (partition key ``pk`` (S), TTL on ``expires_at``)."""

from __future__ import annotations

import logging

import boto3
from moto.server import ThreadedMotoServer

from relay_local.gateway.lambda_context import LOCAL_REGION

PARTITION_KEY = "pk"
TTL_ATTRIBUTE = "expires_at"


class LocalDynamoDb:
    """``start()`` serves moto on ``127.0.0.1:port`` (0 = a free port) and creates ``tables``; ``stop()`` ends it."""

    def __init__(self, tables: tuple[str, ...], *, port: int = 0) -> None:
        self.tables = tables
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        self.endpoint_url = ""

    def start(self) -> LocalDynamoDb:
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's per-request access log
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint_url = f"http://{host}:{port}"
        client = boto3.client(
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
        if self.endpoint_url:
            self._server.stop()
            self.endpoint_url = ""


__all__ = ["PARTITION_KEY", "TTL_ATTRIBUTE", "LocalDynamoDb"]
