"""The agent options ``relay up`` and ``relay chat --local`` share: which model the local agent runs.

It names the stand-ins' models and transports through ``relay_core.agent.defaults`` and ``voice_agent.config``,
never by importing a stand-in (``relay_local``), so ``relay --help`` loads none."""

from __future__ import annotations

import argparse

from relay_cli.cli_args import http_url, positive_rate, tts_session_url
from relay_core.agent.defaults import LOCAL_SMOLLM2_MODEL_ID, SPEAK_TOKENS_PER_S
from relay_core.cli_usage import non_empty
from voice_agent.config import AgentConfig, ModelKind, TransportKind

SPEAK_MODEL_NOTICE = (
    "[model: speak — local.echo on the local Bedrock stand-in streams your prompt back as the reply; no LLM]"
)
SMOLLM2 = "smollm2"
"""``--model smollm2``: Bedrock's API with model id ``local.smollm2-135m-instruct`` on the local stand-in."""
SMOLLM2_NOTICE = (
    "[model: smollm2 — SmolLM2-135M-Instruct, a real but very small LLM on CPU, through the local Bedrock stand-in]"
)
MODEL_CHOICES = (ModelKind.SPEAK.value, SMOLLM2, *(k.value for k in ModelKind if k is not ModelKind.SPEAK))
TTS_TRANSPORTS = tuple(kind.value for kind in TransportKind)
"""``--tts-transport``: how the local agent reaches the container (``relay_local.stack.VoiceStack``'s choices)."""


def model_notice(config: AgentConfig) -> str | None:
    """The line that says which local model answers (None for a model the stand-in does not serve)."""
    if config.model is ModelKind.SPEAK:
        return SPEAK_MODEL_NOTICE
    if config.model is ModelKind.BEDROCK and config.model_id == LOCAL_SMOLLM2_MODEL_ID:
        return SMOLLM2_NOTICE
    return None


def add_agent_options(parser: argparse.ArgumentParser) -> None:
    """``--tts-url``, ``--tts-transport``, ``--agent-url``, ``--model``, ``--model-id``, ``--base-url``, ``--rate``."""
    group = parser.add_argument_group("local agent")
    group.add_argument(
        "--tts-url",
        type=tts_session_url,
        help="use this running TTS container (ws://.../invocations-bidirectional-stream)",
    )
    group.add_argument(
        "--tts-transport",
        choices=TTS_TRANSPORTS,
        default=TTS_TRANSPORTS[0],
        help="how the local agent reaches the TTS container: a plain WebSocket (default), or SageMaker's "
        "bidirectional stream through the local front end (the real SDK, TLS, HTTP/2, SigV4: the AWS path)",
    )
    group.add_argument("--agent-url", type=http_url, help="use this running agent (http://host:port)")
    group.add_argument(
        "--model",
        choices=MODEL_CHOICES,
        default=ModelKind.SPEAK.value,
        help="speak (default: the echo model, no LLM), smollm2 (a real 135M LLM on CPU; both through the local "
        "Bedrock stand-in and Strands' BedrockModel), bedrock, openai or ollama",
    )
    group.add_argument("--model-id", type=non_empty, help="model id for bedrock/openai/ollama")
    group.add_argument("--base-url", type=http_url, help="base URL of an OpenAI-compatible or Ollama server")
    group.add_argument(
        "--rate",
        type=positive_rate,
        default=SPEAK_TOKENS_PER_S,
        help=f"speak model: tokens per second (default {SPEAK_TOKENS_PER_S:g})",
    )


def agent_config_from(args: argparse.Namespace) -> AgentConfig:
    """The agent's configuration from the options; raises ``voice_agent.errors.ConfigError`` when inconsistent."""
    if args.model == SMOLLM2:
        return AgentConfig(model=ModelKind.BEDROCK, model_id=LOCAL_SMOLLM2_MODEL_ID, speak_tokens_per_s=args.rate)
    return AgentConfig(
        model=ModelKind(args.model),
        model_id=args.model_id,
        model_base_url=args.base_url,
        speak_tokens_per_s=args.rate,
    )


__all__ = [
    "MODEL_CHOICES",
    "SMOLLM2",
    "SMOLLM2_NOTICE",
    "SPEAK_MODEL_NOTICE",
    "add_agent_options",
    "agent_config_from",
    "model_notice",
]
