"""Fixtures for the gateway functions: moto (DynamoDB, Lambda, @connections), recorded API Gateway events, a JWKS
served on loopback with a key made in the test, and a scripted stand-in for the agent's SSE stream."""

from __future__ import annotations

import copy
import json
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import quote

import boto3
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from moto import mock_aws
from moto.apigatewaymanagementapi.models import apigatewaymanagementapi_backends
from moto.awslambda_simple.models import LambdaSimpleBackend
from moto.dynamodb.responses import DynamoHandler

from relay_core.agent.events import AgentEnd, AgentEvent, AgentPayload, TurnStatus, serialize_event
from relay_core.sse import encode_sse
from relay_functions.gateway.deps import GatewayDeps, set_process_deps
from relay_functions.gateway.settings import GatewaySettings
from relay_local.moto_dynamodb import one_request_at_a_time

EVENTS = Path(__file__).resolve().parents[2] / "events" / "apigw"
REGION = "us-east-1"
ACCOUNT = "123456789012"
ISSUER = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_TestPool"
CLIENT_ID = "5ab1cdefghijklmnop2qrstuvw"
RUNTIME_ARN = f"arn:aws:bedrock-agentcore:{REGION}:{ACCOUNT}:runtime/voice_agent-AbCdEf1234"
ENDPOINT = "https://abcdef1234.execute-api.us-east-1.amazonaws.com/production"
DEADLINE_S = 10.0


def load_event(name: str, **overrides: Any) -> dict[str, Any]:
    """A recorded API Gateway event from tests/events/apigw (a fresh copy), with top-level fields replaced."""
    event: dict[str, Any] = json.loads((EVENTS / name).read_text(encoding="utf-8"))
    event = copy.deepcopy(event)
    event.update(overrides)
    return event


def message_event(route: str, body: dict[str, Any] | str, *, connection_id: str) -> dict[str, Any]:
    """A MESSAGE event for ``route`` on ``connection_id`` (the recorded send_message event re-addressed)."""
    event = load_event("send_message.json")
    event["body"] = body if isinstance(body, str) else json.dumps(body)
    event["requestContext"]["routeKey"] = route
    event["requestContext"]["connectionId"] = connection_id
    return event


def with_connection(event: dict[str, Any], connection_id: str, user_id: str | None = None) -> dict[str, Any]:
    event["requestContext"]["connectionId"] = connection_id
    if user_id is not None:
        event["requestContext"]["authorizer"]["user_id"] = user_id
        event["requestContext"]["authorizer"]["principalId"] = user_id
    return event


@dataclass
class FakeLambdaContext:
    """The attributes of a Lambda context that Powertools reads."""

    function_name: str = "kokoro-relay-test"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:kokoro-relay-test"
    aws_request_id: str = "5f1e3a2b-0000-4000-8000-000000000001"
    log_group_name: str = "/aws/lambda/kokoro-relay-test"
    log_stream_name: str = "2026/12/01/[$LATEST]0123456789abcdef"

    def get_remaining_time_in_millis(self) -> int:
        return 900_000


@pytest.fixture
def lambda_context() -> FakeLambdaContext:
    return FakeLambdaContext()


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """moto for every AWS call of the test (Lambda invocations run in-process, no Docker)."""
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_LAMBDA", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws(config={"lambda": {"use_docker": False}}):
        yield


def make_settings(**overrides: Any) -> GatewaySettings:
    values: dict[str, Any] = {
        "connections_table": "relay-connections",
        "turns_table": "relay-turns",
        "relay_function_name": "kokoro-relay-relay",
        "agent_runtime_arn": RUNTIME_ARN,
        "jwt_issuer": ISSUER,
        "jwt_audience": (CLIENT_ID,),
        "jwks_url": f"{ISSUER}/.well-known/jwks.json",
    }
    values.update(overrides)
    return GatewaySettings(**values)


@pytest.fixture
def settings() -> GatewaySettings:
    return make_settings()


def serialize_dynamodb_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make moto apply one DynamoDB request at a time, as DynamoDB applies one write at a time to an item.

    moto checks a write's ``ConditionExpression`` and then applies it with no lock, so two threads (a route handler
    and a relay) can both pass their conditions against the same old item: a resume and the relay's close, each
    conditional on the other not having happened, would both succeed, which DynamoDB never allows
    (``relay_local.moto_dynamodb.one_request_at_a_time``, which the local stack uses too)."""
    monkeypatch.setattr(DynamoHandler, "call_action", one_request_at_a_time(DynamoHandler.call_action))


@pytest.fixture
def dynamodb(aws: None, settings: GatewaySettings, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A moto DynamoDB client with the two tables (partition key ``pk``, TTL ``expires_at``); each request is
    applied whole before the next (:func:`serialize_dynamodb_requests`)."""
    serialize_dynamodb_requests(monkeypatch)
    client = boto3.client("dynamodb", region_name=REGION)
    for table in (settings.connections_table, settings.turns_table):
        client.create_table(
            TableName=table,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        client.update_time_to_live(
            TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires_at"}
        )
    return client


@pytest.fixture
def deps(dynamodb: Any, settings: GatewaySettings) -> Iterator[GatewayDeps]:
    """The handlers' dependencies over moto, installed as the process's (and removed after the test)."""
    built = GatewayDeps(settings=settings, dynamodb=dynamodb, lambda_client=boto3.client("lambda", region_name=REGION))
    set_process_deps(built)
    yield built
    set_process_deps(None)


def posted(connection_id: str) -> list[dict[str, Any]]:
    """Every message moto's @connections API received for a connection, in order (moto concatenates them)."""
    connections = apigatewaymanagementapi_backends[ACCOUNT][REGION].connections
    key = quote(connection_id, safe="")  # moto keys by the URL path segment ("=" arrives as %3D)
    data = connections[key].data.decode("utf-8") if key in connections else ""
    decoder = json.JSONDecoder()
    messages, index = [], 0
    while index < len(data):
        obj, index = decoder.raw_decode(data, index)
        messages.append(obj)
    return messages


@dataclass
class RelayThreads:
    """The relay invocations ``sendMessage`` made, each run by the real relay handler on a thread of its own."""

    threads: list[threading.Thread] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)

    def join(self, timeout_s: float = 15.0) -> None:
        """Wait for every relay started so far; fail if one is still running (a turn left running)."""
        for thread in list(self.threads):
            thread.join(timeout=timeout_s)
            assert not thread.is_alive(), "a relay never finished: a turn was left running"


@pytest.fixture
def relay_threads(monkeypatch: pytest.MonkeyPatch, lambda_context: Any) -> RelayThreads:
    """moto's Lambda Invoke (``InvocationType=Event``) runs ``relay.handler`` on a thread, as Lambda would."""
    from relay_functions.gateway import relay  # noqa: PLC0415 - the handler module, imported where it runs

    running = RelayThreads()

    def invoke(self: Any, function_name: str, qualifier: Any, body: Any, headers: Any, response_headers: Any) -> bytes:
        payload = json.loads(body)
        thread = threading.Thread(target=lambda: running.results.append(relay.handler(payload, lambda_context)))
        running.threads.append(thread)
        thread.start()
        return b""

    monkeypatch.setattr(LambdaSimpleBackend, "invoke", invoke)
    return running


# --- tokens --------------------------------------------------------------------------------------------------


@dataclass
class Issuer:
    """A signing key made in the test, its JWKS served on loopback, and a token factory."""

    jwks_url: str
    key: rsa.RSAPrivateKey
    kid: str = "test-key-1"

    def token(self, *, key: rsa.RSAPrivateKey | None = None, kid: str | None = None, **claims: Any) -> str:
        now = int(time.time())
        body: dict[str, Any] = {
            "sub": "3f6c1d2e-7a8b-4c9d-8e0f-1a2b3c4d5e6f",
            "iss": ISSUER,
            "aud": CLIENT_ID,
            "token_use": "id",
            "iat": now,
            "exp": now + 600,
        }
        body.update(claims)
        body = {k: v for k, v in body.items() if v is not None}
        return jwt.encode(body, key or self.key, algorithm="RS256", headers={"kid": kid or self.kid})


@pytest.fixture(scope="session")
def issuer() -> Iterator[Issuer]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    jwk.update({"kid": "test-key-1", "alg": "RS256", "use": "sig"})
    body = json.dumps({"keys": [jwk]}).encode()

    class JwksHandler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), JwksHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Issuer(jwks_url=f"http://127.0.0.1:{server.server_address[1]}/.well-known/jwks.json", key=key)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


# --- the agent's stream --------------------------------------------------------------------------------------


def sse(*events: AgentEvent) -> bytes:
    """The SSE body bytes the agent sends for ``events``."""
    return b"".join(encode_sse(serialize_event(e)) for e in events)


class ScriptedStream:
    """A turn body the test feeds; ``close`` (from the relay) ends a blocked read, as closing a socket does."""

    def __init__(self) -> None:
        self._items: queue.Queue[bytes | None] = queue.Queue()
        self.closed = threading.Event()

    def push(self, data: bytes, *, split: int | None = None) -> None:
        """Queue body bytes, cut into ``split``-byte transport chunks when given."""
        step = split or len(data) or 1
        for start in range(0, len(data), step):
            self._items.put(data[start : start + step])

    def end(self) -> None:
        self._items.put(None)

    def chunks(self) -> Iterator[bytes]:
        while not self.closed.is_set():
            try:
                item = self._items.get(timeout=DEADLINE_S * 3)
            except queue.Empty:
                raise TimeoutError("the test never ended the scripted stream") from None
            if item is None:
                return
            yield item

    def close(self) -> None:
        self.closed.set()
        self._items.put(None)


@dataclass
class FakeAgent:
    """Stands in for the agent behind AgentCore: hands out one scripted stream per turn; a cancel request ends
    the running turn with ``agent_end`` status cancelled, as the voice agent does."""

    on_open: Callable[[ScriptedStream, AgentPayload], None] | None = None
    honour_cancel: bool = True
    streams: list[ScriptedStream] = field(default_factory=list)
    payloads: list[AgentPayload] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)
    cancels: list[tuple[str, str]] = field(default_factory=list)
    played_ms: list[int | None] = field(default_factory=list)
    """The ``played_ms`` of each cancel request, in order (beside :attr:`cancels`)."""
    opened: threading.Event = field(default_factory=threading.Event)

    def open_turn(self, *, session_id: str, payload: AgentPayload) -> ScriptedStream:
        stream = ScriptedStream()
        self.streams.append(stream)
        self.payloads.append(payload)
        self.sessions.append(session_id)
        if self.on_open is not None:
            self.on_open(stream, payload)
        self.opened.set()
        return stream

    def stream_of(self, request_id: str) -> ScriptedStream:
        """The stream of the turn ``request_id`` (the latest one opened for it; else the latest opened)."""
        for stream, payload in zip(reversed(self.streams), reversed(self.payloads), strict=True):
            if payload.request_id == request_id:
                return stream
        return self.streams[-1]

    def cancel(self, *, session_id: str, request_id: str, played_ms: int | None = None) -> list[str]:
        self.cancels.append((session_id, request_id))
        self.played_ms.append(played_ms)
        if self.honour_cancel and self.streams:
            stream = self.stream_of(request_id)
            stream.push(sse(AgentEnd(request_id=request_id, status=TurnStatus.CANCELLED.value)))
            stream.end()
        return [request_id]


class RecordingPoster:
    """Stands in for API Gateway's @connections in relay tests: records what each connection received; a
    connection in ``gone`` answers like a GoneException."""

    def __init__(self) -> None:
        self.sent: dict[str, list[str]] = {}
        self.gone: set[str] = set()
        self._changed = threading.Condition()

    def post(self, connection_id: str, message: str) -> bool:
        with self._changed:
            if connection_id in self.gone:
                return False
            self.sent.setdefault(connection_id, []).append(message)
            self._changed.notify_all()
            return True

    def messages(self, connection_id: str) -> list[dict[str, Any]]:
        with self._changed:
            return [json.loads(m) for m in self.sent.get(connection_id, [])]

    def wait_for(self, predicate: Callable[[], bool], timeout_s: float = DEADLINE_S) -> None:
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not predicate():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"condition not met within {timeout_s} s; sent so far: {self.sent}")
                self._changed.wait(remaining)


def wait_until(predicate: Callable[[], bool], timeout_s: float = DEADLINE_S, interval_s: float = 0.01) -> None:
    """Wait for a condition another thread makes true, failing the test at the deadline."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout_s} s")
        time.sleep(interval_s)


@pytest.fixture
def gw() -> ModuleType:
    """This module, for its helpers (test modules cannot import a conftest): ``gw.FakeAgent``, ``gw.sse`` ..."""
    return sys.modules[__name__]
