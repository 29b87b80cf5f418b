"""The local voice stack: the TTS container app and the agent app, each on a free loopback port, and the local
Bedrock stand-in the agent's model calls.

``VoiceStack`` starts whichever of the two the caller did not point at (``tts_url`` / ``agent_url``), waits
until the TTS model is loaded (``/ping`` 200), and stops what it started. When it starts the agent it also serves
the Bedrock stand-in (``relay_local.bedrock``) and points this process's boto3 at it
(``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``) until it stops, unless ``serve_bedrock=False`` (``RelayStack`` serves it on
the local AWS port instead). The agent's model is loaded before the agent starts (``SmolLM2`` takes seconds).
The same code AWS runs sits above it; only the data planes differ (ARCHITECTURE "AWS ↔ local").
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Final

import httpx

from relay_core.tts.messages import SESSION_PATH
from relay_local.bedrock.models import ModelRegistry
from relay_local.servers import BackgroundServer, ServerStartError
from voice_agent.config import AgentConfig, ModelKind, TransportKind

if TYPE_CHECKING:
    from relay_local.bedrock.standin import BedrockStandIn
    from relay_local.sagemaker_frontend import SageMakerFrontEnd
    from relay_transport.base import TtsTransport

TTS_WS_PATH = SESSION_PATH
MODEL_LOAD_TIMEOUT_S = 180.0
TTS_TRANSPORTS: Final = tuple(kind.value for kind in TransportKind)
"""How the agent reaches the container: a plain WebSocket, or SageMaker's bidirectional stream through the local
front end (``relay_local.sagemaker_frontend``), so the local path equals the AWS path above the network."""


def wait_until_ready(
    http_url: str,
    *,
    timeout_s: float = MODEL_LOAD_TIMEOUT_S,
    poll_s: float = 0.1,
    alive: Callable[[], bool] = lambda: True,
) -> None:
    """Block until ``GET {http_url}/ping`` answers 200 (the TTS model is loaded), checking every ``poll_s``.
    ``alive`` (e.g. "the server process still runs") failing ends the wait at once with ``ServerStartError``."""
    deadline = time.monotonic() + timeout_s
    last = "no answer"
    while time.monotonic() < deadline:
        if not alive():
            raise ServerStartError(f"the server behind {http_url} stopped before /ping answered 200 (last: {last})")
        try:
            response = httpx.get(f"{http_url}/ping", timeout=2.0)
        except httpx.HTTPError as exc:
            last = repr(exc)
        else:
            if response.status_code == 200:
                return
            last = f"HTTP {response.status_code}"
        time.sleep(poll_s)
    raise ServerStartError(f"{http_url}/ping did not answer 200 within {timeout_s:.0f} s (last: {last})")


def tts_voice_summary(http_url: str) -> str | None:
    """``default voice af_heart of 33 voices``, from the TTS app's ``GET /v1/audio/voices`` (None if it fails):
    the voice that speaks when a request names none (installed packs included, docs/server.md Voices)."""
    try:
        listing = httpx.get(f"{http_url}/v1/audio/voices", timeout=5.0).json()
        return f"default voice {listing['default']} of {len(listing['voices'])} voices"
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return None


class VoiceStack:
    """TTS container + agent on loopback. Use as a context manager (blocking start/stop).

    ``tts_transport="sagemaker"`` puts the local SageMaker front end between the agent and the container."""

    def __init__(
        self,
        *,
        tts_url: str | None = None,
        agent_url: str | None = None,
        agent_config: AgentConfig | None = None,
        tts_transport: str = "ws",
        models: ModelRegistry | None = None,
        serve_bedrock: bool = True,
    ) -> None:
        if tts_transport not in TTS_TRANSPORTS:
            raise ValueError(f"tts_transport must be one of {', '.join(TTS_TRANSPORTS)}, not {tts_transport!r}")
        self.tts_transport = tts_transport
        self._frontend: SageMakerFrontEnd | None = None
        self._given_tts_url = tts_url
        self._given_agent_url = agent_url
        self._agent_config = agent_config or AgentConfig(model=ModelKind.SPEAK)
        self._servers: list[BackgroundServer] = []
        self.models = models or ModelRegistry()
        """The Bedrock stand-in's models (``relay_local.bedrock``)."""
        self._serve_bedrock = serve_bedrock
        self.bedrock: BedrockStandIn | None = None
        """The stand-in this stack serves (None with ``serve_bedrock=False`` or a given ``agent_url``)."""
        self.tts_url = tts_url or ""
        self.tts_voices: str | None = None
        """Which voice the TTS app this stack started speaks with by default, of how many (``default voice af_heart
        of 33 voices``); None when the TTS app was given (``tts_url``)."""
        self.agent_url = agent_url or ""

    def start(self) -> VoiceStack:
        from kokoro_server.app import create_app as create_tts_app  # noqa: PLC0415 - the apps' imports (the model's
        from voice_agent.app import create_app as create_agent_app  # noqa: PLC0415 - G2P, strands) only when started

        try:
            if self._given_agent_url is None:
                if self._given_tts_url is None:
                    tts = BackgroundServer(create_tts_app(), name="kokoro").start()
                    self._servers.append(tts)
                    wait_until_ready(tts.http_url)
                    self.tts_url = tts.ws_url + TTS_WS_PATH
                    self.tts_voices = tts_voice_summary(tts.http_url)
                self.preload_model()
                if self._serve_bedrock:
                    from relay_local.bedrock.standin import BedrockStandIn  # noqa: PLC0415

                    self.bedrock = BedrockStandIn(self.models).start(set_environment=True)
                config = dataclasses.replace(self._agent_config, tts_url=self.tts_url)
                transport = self._sagemaker_transport() if self.tts_transport == "sagemaker" else None
                agent = BackgroundServer(create_agent_app(config, transport=transport), name="agent").start()
                self._servers.append(agent)
                self.agent_url = agent.http_url
        except BaseException:
            self.stop()
            raise
        return self

    def preload_model(self) -> None:
        """Load the agent's model now if the stand-in serves it (the real one takes seconds; the echo one nothing)."""
        config = self._agent_config
        if config.model is ModelKind.BEDROCK and config.model_id in self.models.model_ids:
            self.models.preload(config.model_id)

    def _sagemaker_transport(self) -> TtsTransport:
        """The agent's ``sagemaker`` transport through a local SageMaker front end before the container: the real
        SDK over TLS + HTTP/2, signed with the front end's dummy keys, trusting its CA (not process-wide)."""
        import boto3  # noqa: PLC0415

        from relay_local.sagemaker_frontend import SageMakerFrontEnd  # noqa: PLC0415 - HTTP/2 SDK only when asked
        from relay_local.sagemaker_frontend.client import local_ca_client_factory  # noqa: PLC0415
        from relay_transport.sagemaker import SageMakerTransport  # noqa: PLC0415

        self._frontend = SageMakerFrontEnd(self.tts_url).start()
        credentials = self._frontend.credentials
        session = boto3.Session(
            aws_access_key_id=credentials.access_key_id,
            aws_secret_access_key=credentials.secret_access_key,
            region_name=credentials.region,
        )
        return SageMakerTransport(
            self._frontend.endpoint_name,
            credentials.region,
            endpoint_uri=self._frontend.endpoint_url,
            session=session,
            http_client_factory=local_ca_client_factory(self._frontend.ca_file),
        )

    @property
    def sagemaker_endpoint_url(self) -> str | None:
        """The local SageMaker front end's URL when ``tts_transport="sagemaker"`` (None otherwise)."""
        return self._frontend.endpoint_url if self._frontend is not None else None

    def stop(self) -> None:
        while self._servers:
            self._servers.pop().stop()
        if self.bedrock is not None:
            self.bedrock.stop()
            self.bedrock = None
        if self._frontend is not None:
            self._frontend.stop()
            self._frontend = None

    def __enter__(self) -> VoiceStack:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


__all__ = ["MODEL_LOAD_TIMEOUT_S", "TTS_TRANSPORTS", "TTS_WS_PATH", "VoiceStack", "wait_until_ready"]
