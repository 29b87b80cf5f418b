"""Choose the TTS transport (:mod:`relay_transport`) the agent's configuration names."""

from __future__ import annotations

from relay_transport.base import TtsTransport
from relay_transport.errors import TransportConfigError
from relay_transport.ws import WsTransport
from voice_agent.config import AgentConfig, TransportKind
from voice_agent.errors import ConfigError


def make_transport(config: AgentConfig) -> TtsTransport:
    """The ``ws`` transport for ``config.tts_url``, or the SageMaker bidirectional-stream transport.

    The SageMaker module (and its HTTP/2 SDK) is imported only when chosen, so the local path never loads it. A
    transport that cannot work with the settings (no AWS region) raises the agent's :class:`ConfigError`."""
    if config.transport is TransportKind.SAGEMAKER:
        from relay_transport.sagemaker import SageMakerTransport  # noqa: PLC0415 - heavy SDK, only when chosen

        assert config.sagemaker_endpoint is not None  # AgentConfig checks it
        try:
            return SageMakerTransport(endpoint_name=config.sagemaker_endpoint, region=config.aws_region)
        except TransportConfigError as exc:
            raise ConfigError(exc.message) from exc
    return WsTransport(config.tts_url, open_timeout_s=config.tts_connect_timeout_s)


__all__ = ["make_transport"]
