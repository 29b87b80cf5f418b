"""The one place that builds AWS clients and the stores over them, lazily (nothing at import, no credentials
needed until a handler runs). Tests and the local stack build :class:`GatewayDeps` over their own clients.

Endpoints follow boto3's standard variables (``AWS_ENDPOINT_URL_DYNAMODB``, ``AWS_ENDPOINT_URL_LAMBDA``,
``AWS_ENDPOINT_URL_BEDROCK_AGENTCORE``); the @connections endpoint comes from each event (or
CONNECTIONS_ENDPOINT_URL).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from relay_functions.gateway.agent_runtime import AgentRuntime, BotoAgentRuntime
from relay_functions.gateway.clock import SYSTEM_CLOCK, Clock
from relay_functions.gateway.connections import ConnectionStore
from relay_functions.gateway.posting import ConnectionPoster, ManagementApiPoster
from relay_functions.gateway.rate_limit import TurnRateLimiter
from relay_functions.gateway.settings import GatewaySettings, load_settings
from relay_functions.gateway.tokens import TokenVerifier
from relay_functions.gateway.turns import TurnStore

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_lambda import LambdaClient

AGENT_READ_TIMEOUT_S = 300
"""Longest silence tolerated on the agent's stream before the read fails (the relay polls meanwhile)."""
MAX_POOL_CONNECTIONS = 64
"""HTTP connections each client keeps. In Lambda one environment runs one invocation at a time, but several
threads of it share a client (the relay's stream reader and its polls and posts), and the local stack runs many
concurrent invocations in one process over the same clients: with botocore's default of 10, the 11th
concurrent call opens a fresh TCP connection and throws it away afterwards (a connect per call under load)."""
CONNECT_TIMEOUT_S = 5
"""Connecting to an AWS endpoint; botocore's default (60 s) would hold a turn far longer than any retry helps."""
READ_TIMEOUT_S = 10
"""One request/response call (DynamoDB, Lambda Invoke, @connections); the agent's stream has its own."""
STANDARD_RETRIES = {"mode": "standard", "max_attempts": 3}
"""botocore's standard retry mode (throttling, 5xx, connection errors: exponential backoff with jitter)."""


def _boto_client(service: Any, **config: Any) -> Any:
    import boto3  # noqa: PLC0415 - imported on first use: keeps handler imports light
    from botocore.config import Config  # noqa: PLC0415

    settings: dict[str, Any] = {
        "max_pool_connections": MAX_POOL_CONNECTIONS,
        "connect_timeout": CONNECT_TIMEOUT_S,
        "read_timeout": READ_TIMEOUT_S,
        "retries": STANDARD_RETRIES,
        **config,
    }
    return boto3.client(service, config=Config(**settings))


@dataclass
class GatewayDeps:
    """Everything the gateway functions talk to. Properties build on first use and are reused (warm starts)."""

    settings: GatewaySettings
    clock: Clock = SYSTEM_CLOCK
    dynamodb: DynamoDBClient | None = None
    lambda_client: LambdaClient | None = None
    agent: AgentRuntime | None = None
    poster_factory: Callable[[str], ConnectionPoster] | None = None
    """Endpoint URL → poster; default: :class:`ManagementApiPoster` over boto3 (one client per endpoint)."""
    verifier: TokenVerifier | None = None
    _posters: dict[str, ConnectionPoster] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @cached_property
    def db(self) -> DynamoDBClient:
        if self.dynamodb is None:
            self.dynamodb = _boto_client("dynamodb")
        return self.dynamodb

    @cached_property
    def connections(self) -> ConnectionStore:
        s = self.settings.require("connections_table")
        return ConnectionStore(self.db, s.connections_table, ttl_s=s.connection_ttl_s, clock=self.clock)

    @cached_property
    def turns(self) -> TurnStore:
        return TurnStore(self.db, self.settings.require("turns_table").turns_table, clock=self.clock)

    @cached_property
    def rate_limiter(self) -> TurnRateLimiter:
        s = self.settings.require("connections_table")
        return TurnRateLimiter(self.db, s.connections_table, turns_per_minute=s.turns_per_minute, clock=self.clock)

    @cached_property
    def lambdas(self) -> LambdaClient:
        if self.lambda_client is None:
            self.lambda_client = _boto_client("lambda")
        return self.lambda_client

    @cached_property
    def agent_runtime(self) -> AgentRuntime:
        if self.agent is None:
            s = self.settings.require("agent_runtime_arn")
            client = _boto_client(
                "bedrock-agentcore",
                read_timeout=AGENT_READ_TIMEOUT_S,
            )
            self.agent = BotoAgentRuntime(client, runtime_arn=s.agent_runtime_arn, qualifier=s.agent_runtime_qualifier)
        return self.agent

    @cached_property
    def token_verifier(self) -> TokenVerifier:
        if self.verifier is None:
            s = self.settings.require("jwt_issuer", "jwt_audience", "jwks_url")
            self.verifier = TokenVerifier.for_jwks_url(
                issuer=s.jwt_issuer, audiences=s.jwt_audience, jwks_url=s.jwks_url
            )
        return self.verifier

    def poster(self, endpoint_url: str) -> ConnectionPoster:
        """The poster for an API's @connections endpoint (CONNECTIONS_ENDPOINT_URL wins when set)."""
        url = self.settings.connections_endpoint_url or endpoint_url
        with self._lock:
            poster = self._posters.get(url)
            if poster is None:
                if self.poster_factory is not None:
                    poster = self.poster_factory(url)
                else:
                    client = _boto_client_at("apigatewaymanagementapi", url)
                    poster = ManagementApiPoster(client)
                self._posters[url] = poster
            return poster


def _boto_client_at(service: Any, endpoint_url: str) -> Any:
    import boto3  # noqa: PLC0415
    from botocore.config import Config  # noqa: PLC0415

    # Our own backoff (posting.Backoff) retries throttling and connection errors; botocore must not retry
    # underneath it.
    config = Config(
        retries={"mode": "standard", "total_max_attempts": 1},
        connect_timeout=CONNECT_TIMEOUT_S,
        read_timeout=READ_TIMEOUT_S,
        max_pool_connections=MAX_POOL_CONNECTIONS,
    )
    return boto3.client(service, endpoint_url=endpoint_url, config=config)


_process_deps: GatewayDeps | None = None
_process_lock = threading.Lock()


def process_deps() -> GatewayDeps:
    """This process's dependencies, built from the environment on first use and reused across invocations."""
    global _process_deps  # noqa: PLW0603 - one per Lambda execution environment, by design
    with _process_lock:
        if _process_deps is None:
            _process_deps = GatewayDeps(settings=load_settings())
        return _process_deps


def set_process_deps(deps: GatewayDeps | None) -> None:
    """Install the dependencies the handlers use (the local stack and tests); None: rebuild from the env."""
    global _process_deps  # noqa: PLW0603
    with _process_lock:
        _process_deps = deps
