"""The Bedrock stand-in on a loopback port of its own, and the environment that points boto3 at it.

:class:`RelayStack` mounts the stand-in's routes on the local AWS port; :class:`BedrockStandIn` serves them alone
(``relay speak``, the voice stack without the gateway, tests of the wire), together with the OpenAI-compatible
``/v1`` routes over the same models. :func:`bedrock_environment` is what a process needs for boto3's
``bedrock-runtime`` client, and so Strands' ``BedrockModel``, to reach it unchanged: the standard
``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` plus dummy credentials and a region where none are set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import TracebackType

from starlette.applications import Starlette

from relay_core.agent.defaults import LOCAL_CREDENTIAL
from relay_local.aws.account import LOCAL_REGION
from relay_local.bedrock.models import ModelRegistry
from relay_local.bedrock.openai_api import OpenAiCompatibleApi
from relay_local.bedrock.runtime import BedrockRuntime
from relay_local.servers import BackgroundServer

ENDPOINT_ENV = "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"


def bedrock_environment(endpoint_url: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Variables to set so boto3's ``bedrock-runtime`` reaches ``endpoint_url``: the endpoint always; dummy
    credentials and ``us-east-1`` (``AWS_REGION`` for Strands, ``AWS_DEFAULT_REGION`` for boto3) only where
    ``env`` (default: the process's) has none."""
    env = os.environ if env is None else env
    out = {ENDPOINT_ENV: endpoint_url}
    if not env.get("AWS_ACCESS_KEY_ID"):
        out.update({"AWS_ACCESS_KEY_ID": LOCAL_CREDENTIAL, "AWS_SECRET_ACCESS_KEY": LOCAL_CREDENTIAL})
    if not (env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")):
        out.update({"AWS_REGION": LOCAL_REGION, "AWS_DEFAULT_REGION": LOCAL_REGION})
    return out


class ProcessEnvironment:
    """Sets variables in ``os.environ`` and puts back what was there (idempotent restore)."""

    def __init__(self) -> None:
        self._saved: dict[str, str | None] = {}

    def set(self, values: Mapping[str, str]) -> None:
        for name, value in values.items():
            self._saved.setdefault(name, os.environ.get(name))
            os.environ[name] = value

    def restore(self) -> None:
        for name, value in self._saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self._saved = {}


class BedrockStandIn:
    """The Bedrock routes and the OpenAI-compatible ``/v1`` routes on a free loopback port (a context manager).
    ``runtime.faults`` injects errors; ``runtime.active`` counts running generations."""

    def __init__(self, models: ModelRegistry | None = None, *, port: int = 0) -> None:
        self.runtime = BedrockRuntime(models)
        app = Starlette(routes=[*self.runtime.routes(), *OpenAiCompatibleApi(self.runtime).routes()])
        self._server = BackgroundServer(app, name="bedrock-standin", port=port)
        self._env = ProcessEnvironment()

    @property
    def endpoint_url(self) -> str:
        """The ``bedrock-runtime`` endpoint (``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``)."""
        return self._server.http_url

    @property
    def openai_base_url(self) -> str:
        """The OpenAI-compatible base URL (``--model openai --base-url``)."""
        return self._server.http_url + "/v1"

    def start(self, *, set_environment: bool = False) -> BedrockStandIn:
        """Serve; with ``set_environment``, also point this process's boto3 at it until :meth:`stop`."""
        self._server.start()
        if set_environment:
            self._env.set(bedrock_environment(self.endpoint_url))
        return self

    def stop(self) -> None:
        self._env.restore()
        self._server.stop()

    def __enter__(self) -> BedrockStandIn:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


__all__ = ["ENDPOINT_ENV", "BedrockStandIn", "ProcessEnvironment", "bedrock_environment"]
