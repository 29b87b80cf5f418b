"""The whole relay on one machine: the TTS container app, the agent app, DynamoDB and S3 (moto over HTTP; S3 keeps
the agent's conversations, bucket ``kokoro-relay-history``), the local
API Gateway WebSocket API with its ``@connections`` API, the Lambda Invoke endpoint, the AgentCore data plane, a
dev user pool (JWKS + tokens) and the web client's origin; the real gateway functions run in-process above them,
their boto3 clients reaching the local endpoints through the standard ``AWS_ENDPOINT_URL_*`` variables.

Usage (tests, ``relay up``, ``relay chat --local``, the web client's browser tests)::

    with RelayStack(tts_url=...) as stack:       # every argument optional and keyword-only
        token = stack.dev_token("alice")
        ... connect to f"{stack.gateway_url}?token={token}" ...

Stable properties: ``gateway_url`` (``ws://127.0.0.1:<port>/<stage>``), ``web_url`` (``http://…``: ``web/``,
``/config.json`` = ``{"gateway_url", "token", "agent_url"}``, ``/agent/invocations`` proxy), ``agent_url``,
``tts_url``, ``aws_url`` (the local AWS endpoints), ``connections_url`` (the ``@connections`` endpoint),
``dynamodb_url``, ``env`` (what the functions see), ``gateway`` (the :class:`WebSocketApi`: stats, open
connections), ``lambdas`` (the :class:`LambdaInvokeService`: asynchronous invocations in flight) and
``agentcore`` (the :class:`AgentCoreDataPlane`: agent streams open).
``dev_token(user_id, ttl_s=3600)`` mints a token the authorizer accepts.

The functions read their settings from the process environment, so the stack sets it on start and restores it on
stop: run one stack per process at a time.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from relay_core import limits
from relay_functions import manifest
from relay_local.aws.account import LOCAL_ACCOUNT, LOCAL_REGION
from relay_local.bedrock.models import ModelRegistry
from relay_local.bedrock.runtime import BedrockRuntime
from relay_local.gateway.agentcore_dataplane import AgentCoreDataPlane
from relay_local.gateway.aws_app import create_aws_app
from relay_local.gateway.events import ApiIdentity
from relay_local.gateway.lambda_invoke import LambdaInvokeService
from relay_local.gateway.websocket_api import GatewayConfig, RouteHandlers, WebSocketApi
from relay_local.gateway_functions import GatewayFunctions, load_gateway_functions, reset_function_state
from relay_local.jwks_issuer import LOCAL_CLIENT_ID, DevTokenIssuer
from relay_local.moto_dynamodb import LocalDynamoDb
from relay_local.moto_s3 import HISTORY_BUCKET, S3_ENDPOINT_ENV, LocalBucket
from relay_local.servers import BackgroundServer
from relay_local.stack import VoiceStack
from relay_local.web_server import AGENT_PROXY_PATH, create_web_app
from voice_agent.config import AgentConfig

DEFAULT_STAGE = "local"
CONNECTIONS_TABLE = "kokoro-relay-connections"
TURNS_TABLE = "kokoro-relay-turns"
AGENT_RUNTIME_ARN = f"arn:aws:bedrock-agentcore:{LOCAL_REGION}:{LOCAL_ACCOUNT}:runtime/kokoro_relay_agent-local0000"
WEB_USER = "web-user"
REPO_WEB_DIR = Path(__file__).resolve().parents[3] / "web"
"""``web/`` of a source checkout (the stack serves it when it exists)."""

"""Client action (route key) → the gateway function serving it (from ``relay_functions.manifest``)."""

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


def _bound_socket(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    return sock


class RelayStack:
    """Everything of the relay on loopback; a context manager (blocking start/stop). See the module docstring."""

    def __init__(
        self,
        *,
        tts_url: str | None = None,
        agent_url: str | None = None,
        agent_config: AgentConfig | None = None,
        handlers: GatewayFunctions | None = None,
        stage: str = DEFAULT_STAGE,
        gateway_port: int = 0,
        aws_port: int = 0,
        web_port: int = 0,
        dynamodb_port: int = 0,
        idle_timeout_s: float = limits.APIGW_IDLE_TIMEOUT_S,
        max_connection_s: float = limits.APIGW_CONNECTION_LIFETIME_S,
        function_env: Mapping[str, str] | None = None,
        web_dir: Path | None = REPO_WEB_DIR,
        handler_log_level: str = "WARNING",
        progress: Progress | None = None,
        tts_transport: str = "ws",
        models: ModelRegistry | None = None,
    ) -> None:
        """``function_env``: extra settings for the functions (e.g. ``{"RESUME_WINDOW_S": "3"}``);
        ``handlers``: other callables than the real functions (tests of the gateway itself); ``tts_transport``:
        ``"sagemaker"`` puts the local SageMaker front end between the agent and the container."""
        self.bedrock = BedrockRuntime(models)
        """The local Bedrock runtime on the AWS port (``bedrock.faults`` injects errors; ``bedrock.models``)."""
        config = agent_config or AgentConfig()
        self.history_bucket = config.history_bucket or HISTORY_BUCKET
        """The bucket (on the stack's moto) the agent keeps its conversations in."""
        self.history: LocalBucket | None = None
        self._voice = VoiceStack(
            tts_url=tts_url,
            agent_url=agent_url,
            agent_config=dataclasses.replace(config, history_bucket=self.history_bucket),
            tts_transport=tts_transport,
            models=self.bedrock.models,
            serve_bedrock=False,
        )
        self._handlers = handlers
        self._api = ApiIdentity(stage=stage)
        self._ports = {"gateway": gateway_port, "aws": aws_port, "web": web_port}
        self._dynamodb = LocalDynamoDb((CONNECTIONS_TABLE, TURNS_TABLE), port=dynamodb_port)
        self._gateway_config = GatewayConfig(
            api=self._api, idle_timeout_s=idle_timeout_s, max_connection_s=max_connection_s
        )
        self._function_env = dict(function_env or {})
        self._web_dir = web_dir
        self._handler_log_level = handler_log_level
        self._progress = progress or _quiet
        self._servers: list[BackgroundServer] = []
        self._saved_env: dict[str, str | None] | None = None
        self._issuer: DevTokenIssuer | None = None
        self.gateway = WebSocketApi(RouteHandlers(), self._gateway_config)
        self.lambdas = LambdaInvokeService({})
        self.agentcore: AgentCoreDataPlane | None = None
        self.env: dict[str, str] = {}
        self.gateway_url = self.web_url = self.aws_url = self.connections_url = ""

    # --- properties --------------------------------------------------------------------------------------
    @property
    def agent_url(self) -> str:
        return self._voice.agent_url

    @property
    def tts_url(self) -> str:
        return self._voice.tts_url

    @property
    def dynamodb_url(self) -> str:
        return self._dynamodb.endpoint_url

    def dev_token(self, user_id: str, *, ttl_s: int = 3600) -> str:
        """A dev ID token for ``user_id`` that the authorizer accepts (negative ``ttl_s``: an expired one)."""
        if self._issuer is None:
            raise RuntimeError("RelayStack.dev_token() needs a started stack: use `with RelayStack() as stack:`")
        return self._issuer.mint(user_id, ttl_s=ttl_s)

    def web_config(self) -> dict[str, Any]:
        """What the web client reads from ``/config.json``."""
        return {
            "gateway_url": self.gateway_url,
            "token": self.dev_token(WEB_USER),
            "agent_url": self.web_url + AGENT_PROXY_PATH.removesuffix("/invocations"),
        }

    # --- lifecycle ---------------------------------------------------------------------------------------
    def start(self) -> RelayStack:
        started = time.perf_counter()
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        self._progress(f"relay stack ready in {time.perf_counter() - started:.1f} s")
        return self

    def _start(self) -> None:
        self._progress("starting the TTS container app (loading Kokoro-82M) and the agent app ...")
        self._voice.start()
        voices = f" ({self._voice.tts_voices})" if self._voice.tts_voices else ""
        self._progress(f"  tts   {self.tts_url}{voices}")
        self._progress(f"  agent {self.agent_url}")
        if self._voice.sagemaker_endpoint_url is not None:
            self._progress(f"  agent -> TTS via the local SageMaker front end {self._voice.sagemaker_endpoint_url}")
        self._progress("starting DynamoDB (moto) ...")
        self._dynamodb.start()
        self._progress(f"  dynamodb {self.dynamodb_url}")
        self.history = LocalBucket(self.history_bucket, self.dynamodb_url).create()
        self._progress(f"  s3      {self.dynamodb_url} (conversations in s3://{self.history_bucket}/)")
        self._issuer = DevTokenIssuer()
        ws_socket = _bound_socket(self._ports["gateway"])
        self.gateway_url = f"ws://127.0.0.1:{ws_socket.getsockname()[1]}/{self._api.stage}"
        dataplane = self.agentcore = AgentCoreDataPlane(self.agent_url, runtime_arn=AGENT_RUNTIME_ARN)
        aws_app = create_aws_app(
            websocket_api=self.gateway,
            websocket_socket=ws_socket,
            lambda_service=self.lambdas,
            dataplane=dataplane,
            services=(self._issuer, self.bedrock),
        )
        aws = BackgroundServer(aws_app, name="local-aws", port=self._ports["aws"])
        self._servers.append(aws)
        self.aws_url = aws.http_url
        self.connections_url = f"{aws.http_url}/{self._api.stage}"
        self._issuer.set_base_url(aws.http_url)
        self._set_env()
        reset_function_state()
        functions = self._handlers or load_gateway_functions()
        self.gateway.handlers = functions.route_handlers()
        self.lambdas.functions.update(functions.by_function_name())
        self._progress("starting the API Gateway WebSocket API, @connections, Lambda and AgentCore endpoints ...")
        aws.start()
        self._progress(f"  gateway {self.gateway_url}")
        self._progress(f"  bedrock-runtime {self.aws_url} ({', '.join(self.bedrock.models.model_ids)})")
        web = BackgroundServer(
            create_web_app(web_dir=self._web_dir, agent_url=self.agent_url, config=self.web_config),
            name="web",
            port=self._ports["web"],
        )
        self._servers.append(web)
        web.start()
        self.web_url = web.http_url
        self._progress(f"  web   {self.web_url}")

    def function_environment(self) -> dict[str, str]:
        """The environment the gateway functions run with (the common brief's variables, local endpoints)."""
        relay_name = manifest.by_name()[manifest.RELAY].function_name
        assert self._issuer is not None
        env = {
            "CONNECTIONS_TABLE": CONNECTIONS_TABLE,
            "TURNS_TABLE": TURNS_TABLE,
            "RELAY_FUNCTION_NAME": relay_name,
            "AGENT_RUNTIME_ARN": AGENT_RUNTIME_ARN,
            "AGENT_RUNTIME_QUALIFIER": "DEFAULT",
            "JWT_ISSUER": self._issuer.issuer,
            "JWT_AUDIENCE": LOCAL_CLIENT_ID,
            "JWKS_URL": self._issuer.jwks_url,
            "CONNECTIONS_ENDPOINT_URL": self.connections_url,
            "AWS_ENDPOINT_URL_DYNAMODB": self.dynamodb_url,
            S3_ENDPOINT_ENV: self.dynamodb_url,
            "AWS_ENDPOINT_URL_LAMBDA": self.aws_url,
            "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE": self.aws_url,
            "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": self.aws_url,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
            "AWS_DEFAULT_REGION": LOCAL_REGION,
            "AWS_REGION": LOCAL_REGION,
            "POWERTOOLS_SERVICE_NAME": "kokoro-relay",
            "POWERTOOLS_METRICS_NAMESPACE": "KokoroRelay",
            "POWERTOOLS_TRACE_DISABLED": "true",
            "POWERTOOLS_METRICS_DISABLED": "true",
            "POWERTOOLS_LOG_LEVEL": self._handler_log_level,
        }
        env.update(self._function_env)
        return env

    def _set_env(self) -> None:
        self.env = self.function_environment()
        self._saved_env = {name: os.environ.get(name) for name in self.env}
        os.environ.update(self.env)

    def _restore_env(self) -> None:
        if self._saved_env is None:
            return
        for name, value in self._saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self._saved_env = None

    def stop(self) -> None:
        """Stop everything that was started (idempotent): web, gateway (closing clients), moto, agent, TTS."""
        self.lambdas.abandon()
        while self._servers:
            self._servers.pop().stop()
        if self.history is not None:
            self.history.delete()
            self.history = None
        self._dynamodb.stop()
        self._voice.stop()
        self._restore_env()
        reset_function_state()

    def __enter__(self) -> RelayStack:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


__all__ = ["AGENT_RUNTIME_ARN", "CONNECTIONS_TABLE", "TURNS_TABLE", "RelayStack"]
