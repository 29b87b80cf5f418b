"""The local API Gateway WebSocket API's own behaviour, with small real handlers written here (same signature as
the relay's functions): handshake statuses, route selection, the frame/message quotas, the idle timeout, the
``@connections`` API and the Lambda Invoke endpoint through real boto3 clients."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
import websockets
from botocore.exceptions import ClientError
from websockets.exceptions import ConnectionClosed, InvalidStatus

from relay_core import limits
from relay_local.gateway.agentcore_dataplane import AgentCoreDataPlane
from relay_local.gateway.aws_app import create_aws_app
from relay_local.gateway.lambda_invoke import LambdaInvokeService
from relay_local.gateway.websocket_api import GatewayConfig, RouteHandlers, WebSocketApi
from relay_local.jwks_issuer import DevTokenIssuer
from relay_local.relay_stack import _bound_socket
from relay_local.servers import BackgroundServer


def aws_client(service: str, endpoint_url: str) -> Any:
    """A real boto3 client of ``service`` at the local endpoint (dummy credentials)."""
    return boto3.client(
        service,  # type: ignore[call-overload]
        endpoint_url=endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


@dataclass
class Recorder:
    """What the in-test handlers saw."""

    events: list[dict[str, Any]] = field(default_factory=list)
    authorizer_calls: int = 0
    disconnected: threading.Event = field(default_factory=threading.Event)
    background_done: threading.Event = field(default_factory=threading.Event)
    connections_url: str = ""

    def routes(self) -> list[str]:
        return [e["requestContext"]["routeKey"] for e in self.events]


def _policy(event: dict[str, Any], effect: str) -> dict[str, Any]:
    statement = {"Action": "execute-api:Invoke", "Effect": effect, "Resource": event["methodArn"]}
    return {
        "principalId": "user-1",
        "policyDocument": {"Version": "2012-10-17", "Statement": [statement]},
        "context": {"userId": "user-1", "plan": "free"},
    }


@contextmanager
def local_api(**config: Any) -> Iterator[tuple[str, str, Recorder]]:
    """(gateway ws URL, local AWS http URL, recorder) of a gateway whose handlers are defined here."""
    rec = Recorder()

    def authorizer(event: dict[str, Any], _: Any) -> dict[str, Any]:
        rec.authorizer_calls += 1
        token = event["queryStringParameters"]["token"]
        if token == "crash":
            raise RuntimeError("the authorizer has a bug")
        if token not in ("good", "deny", "refuse"):
            raise Exception("Unauthorized")  # AWS convention for a 401
        return _policy(event, "Allow" if token != "deny" else "Deny")

    def connect(event: dict[str, Any], _: Any) -> dict[str, Any]:
        rec.events.append(event)
        refuse = event["queryStringParameters"]["token"] == "refuse"
        return {"statusCode": 429 if refuse else 200}

    def disconnect(event: dict[str, Any], _: Any) -> dict[str, Any]:
        rec.events.append(event)
        rec.disconnected.set()
        return {"statusCode": 200}

    def echo(event: dict[str, Any], context: Any) -> dict[str, Any]:
        rec.events.append(event)
        client = aws_client("apigatewaymanagementapi", rec.connections_url)
        body = json.dumps({"echo": event["body"], "function": context.function_name})
        client.post_to_connection(ConnectionId=event["requestContext"]["connectionId"], Data=body.encode())
        return {"statusCode": 200}

    def ping(event: dict[str, Any], _: Any) -> dict[str, Any]:
        rec.events.append(event)
        return {"statusCode": 200, "body": "pong"}

    def default(event: dict[str, Any], _: Any) -> dict[str, Any]:
        rec.events.append(event)
        return {"statusCode": 200, "body": json.dumps({"type": "error", "code": "unknown_action"})}

    def background(event: dict[str, Any], _: Any) -> dict[str, Any]:
        rec.events.append(event)
        rec.background_done.set()
        return {"ok": event.get("n", 0) + 1}

    handlers = RouteHandlers(
        authorizer=authorizer,
        routes={"$connect": connect, "$disconnect": disconnect, "$default": default, "echo": echo, "ping": ping},
    )
    api = WebSocketApi(handlers, GatewayConfig(**config))
    sock = _bound_socket(0)
    app = create_aws_app(
        websocket_api=api,
        websocket_socket=sock,
        lambda_service=LambdaInvokeService({"background-fn": background}),
        dataplane=AgentCoreDataPlane("http://127.0.0.1:9"),
        services=(DevTokenIssuer(),),
    )
    with BackgroundServer(app, name="test-aws") as server:
        rec.connections_url = f"{server.http_url}/local"
        yield f"ws://127.0.0.1:{sock.getsockname()[1]}/local", server.http_url, rec


@pytest.fixture(scope="module")
def api() -> Iterator[tuple[str, str, Recorder]]:
    with local_api() as running:
        yield running


async def _status_of_refused(url: str) -> int:
    with pytest.raises(InvalidStatus) as refused:
        async with websockets.connect(url):
            pass
    return refused.value.response.status_code


def test_handshake_statuses_are_api_gateways(api: tuple[str, str, Recorder]) -> None:
    gateway, _, rec = api
    calls_before = rec.authorizer_calls
    assert asyncio.run(_status_of_refused(gateway)) == 401  # no identity source: the authorizer is not called
    assert rec.authorizer_calls == calls_before
    assert asyncio.run(_status_of_refused(gateway + "?token=forged")) == 401
    assert asyncio.run(_status_of_refused(gateway + "?token=deny")) == 403
    assert asyncio.run(_status_of_refused(gateway + "?token=crash")) == 500
    assert asyncio.run(_status_of_refused(gateway + "?token=refuse")) == 429  # $connect's own status
    assert asyncio.run(_status_of_refused(gateway.replace("/local", "/prod") + "?token=good")) == 403


def test_routes_events_and_authorizer_context(api: tuple[str, str, Recorder]) -> None:
    gateway, _, rec = api

    async def talk() -> list[Any]:
        async with websockets.connect(gateway + "?token=good") as ws:
            await ws.send(json.dumps({"action": "echo", "n": 1}))
            echoed = json.loads(await ws.recv())
            await ws.send(json.dumps({"action": "ping"}))
            pong = await ws.recv()
            await ws.send(json.dumps({"action": "nope"}))
            unknown = json.loads(await ws.recv())
            await ws.send("this is not JSON")
            not_json = json.loads(await ws.recv())
            await ws.send(b"\x00\x01binary")
            binary = json.loads(await ws.recv())
            return [echoed, pong, unknown, not_json, binary]

    echoed, pong, unknown, not_json, binary = asyncio.run(talk())
    assert echoed == {"echo": json.dumps({"action": "echo", "n": 1}), "function": "echo"}
    assert pong == "pong"
    assert unknown["code"] == not_json["code"] == binary["code"] == "unknown_action"
    by_route = {e["requestContext"]["routeKey"]: e for e in rec.events}
    connect = by_route["$connect"]
    assert connect["requestContext"]["eventType"] == "CONNECT"
    assert connect["requestContext"]["authorizer"]["userId"] == "user-1"
    assert connect["requestContext"]["authorizer"]["principalId"] == "user-1"
    echo = by_route["echo"]
    assert echo["requestContext"]["eventType"] == "MESSAGE"
    assert echo["requestContext"]["authorizer"]["plan"] == "free"
    assert echo["requestContext"]["connectionId"] == connect["requestContext"]["connectionId"]
    assert echo["requestContext"]["stage"] == "local"
    binary_event = [e for e in rec.events if e.get("isBase64Encoded")][-1]
    assert base64.b64decode(binary_event["body"]) == b"\x00\x01binary"
    assert rec.disconnected.wait(5)
    closing = [e for e in rec.events if e["requestContext"]["routeKey"] == "$disconnect"][-1]
    assert closing["requestContext"]["disconnectStatusCode"] == 1000


def test_frame_over_32_kb_closes_with_1009(api: tuple[str, str, Recorder]) -> None:
    gateway, _, _ = api

    async def send(payload: Any) -> int | None:
        async with websockets.connect(gateway + "?token=good", max_size=None) as ws:
            await ws.send(payload)
            try:
                await ws.recv()
            except ConnectionClosed as closed:
                return closed.rcvd.code if closed.rcvd else None
            return None

    body = json.dumps({"action": "ping", "pad": "x" * limits.APIGW_FRAME_BYTES})
    assert asyncio.run(send(body)) == 1009
    frame = "x" * (limits.APIGW_FRAME_BYTES - 100)
    within = [json.dumps({"action": "ping", "pad": ""})[:-2] + '"', *([frame] * 3), '"}']
    assert asyncio.run(send(within)) is None  # ~96 KB in 32 KB frames: one message, accepted, answered
    over = [json.dumps({"action": "ping", "pad": ""})[:-2] + '"', *([frame] * 5), '"}']
    assert asyncio.run(send(over)) == 1009  # ~160 KB: over the 128 KB message quota


def test_connections_api_through_boto3(api: tuple[str, str, Recorder]) -> None:
    gateway, aws_url, rec = api
    client = aws_client("apigatewaymanagementapi", f"{aws_url}/local")
    with pytest.raises(client.exceptions.GoneException):
        client.post_to_connection(ConnectionId="AAAAAAAAAAAAAAA=", Data=b"{}")
    with pytest.raises(client.exceptions.GoneException):
        client.get_connection(ConnectionId="AAAAAAAAAAAAAAA=")

    async def scenario() -> tuple[str, int]:
        rec.disconnected.clear()
        async with websockets.connect(gateway + "?token=good", max_size=None, user_agent_header="probe/1") as ws:
            await ws.send(json.dumps({"action": "echo"}))
            await ws.recv()
            connection_id = [e for e in rec.events if e["requestContext"]["routeKey"] == "echo"][-1]["requestContext"][
                "connectionId"
            ]
            info = await asyncio.to_thread(client.get_connection, ConnectionId=connection_id)
            assert info["Identity"]["UserAgent"] == "probe/1"
            assert info["Identity"]["SourceIp"] == "127.0.0.1"
            big = b'"' + b"x" * (limits.APIGW_MESSAGE_BYTES + 1) + b'"'
            with pytest.raises(ClientError) as too_large:
                await asyncio.to_thread(client.post_to_connection, ConnectionId=connection_id, Data=big)
            assert too_large.value.response["Error"]["Code"] == "PayloadTooLargeException"
            posted = json.dumps(
                {"pad": "é" * 30_000}, ensure_ascii=False
            )  # 60 KB of UTF-8: goes out in frames of <= 32 KB
            await asyncio.to_thread(client.post_to_connection, ConnectionId=connection_id, Data=posted.encode())
            assert await ws.recv() == posted
            await asyncio.to_thread(client.delete_connection, ConnectionId=connection_id)
            with pytest.raises(ConnectionClosed):
                await ws.recv()
            return connection_id, ws.close_code or 0

    connection_id, code = asyncio.run(scenario())
    assert code == 1000
    assert rec.disconnected.wait(5)
    with pytest.raises(client.exceptions.GoneException):
        client.post_to_connection(ConnectionId=connection_id, Data=b"{}")


def test_idle_connections_close_with_1001() -> None:
    with local_api(idle_timeout_s=0.5) as (gateway, _, rec):

        async def idle() -> int | None:
            async with websockets.connect(gateway + "?token=good") as ws:
                try:
                    await asyncio.wait_for(ws.recv(), 10)
                except ConnectionClosed as closed:
                    return closed.rcvd.code if closed.rcvd else None
            return None

        assert asyncio.run(idle()) == 1001
        assert rec.disconnected.wait(5)
        closing = [e for e in rec.events if e["requestContext"]["routeKey"] == "$disconnect"][-1]
        assert closing["requestContext"]["disconnectStatusCode"] == 1001


def test_lambda_invoke_endpoint_through_boto3(api: tuple[str, str, Recorder]) -> None:
    _, aws_url, rec = api
    client = aws_client("lambda", aws_url)
    rec.background_done.clear()
    answer = client.invoke(FunctionName="background-fn", InvocationType="Event", Payload=b'{"n": 1}')
    assert answer["StatusCode"] == 202
    assert rec.background_done.wait(5)
    answer = client.invoke(FunctionName="arn:aws:lambda:us-east-1:000000000000:function:background-fn", Payload=b"{}")
    assert json.loads(answer["Payload"].read()) == {"ok": 1}
    with pytest.raises(client.exceptions.ResourceNotFoundException):
        client.invoke(FunctionName="missing-fn", InvocationType="Event", Payload=b"{}")
