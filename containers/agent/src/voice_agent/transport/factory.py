"""Choose the TTS transport the configuration names."""

from __future__ import annotations

from voice_agent.config import AgentConfig, TransportKind
from voice_agent.transport.base import TtsTransport
from voice_agent.transport.ws import WsTransport


def make_transport(config: AgentConfig) -> TtsTransport:
    """The ``ws`` transport for ``config.tts_url``, or the SageMaker bidirectional-stream transport.

    The SageMaker module (and its HTTP/2 SDK) is imported only when chosen, so the local path never loads it."""
    if config.transport is TransportKind.SAGEMAKER:
        from voice_agent.transport.sagemaker import SageMakerTransport  # noqa: PLC0415 - heavy SDK, only when chosen

        assert config.sagemaker_endpoint is not None  # AgentConfig checks it
        return SageMakerTransport(endpoint_name=config.sagemaker_endpoint, region=config.aws_region)
    return WsTransport(config.tts_url, open_timeout_s=config.tts_connect_timeout_s)


__all__ = ["make_transport"]
