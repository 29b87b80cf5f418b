"""The voice agent's configuration: one frozen record, built from CLI flags or the environment.

Deployed on AgentCore the agent reads ``VOICE_AGENT_*`` environment variables (set by the CDK stack);
locally ``voice-agent --tts-url ws://...`` builds the same record from flags. Nothing else reads the
environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from relay_core import limits
from relay_core.audio import max_pcm_bytes_for_base64
from relay_core.tts_messages import SESSION_PATH
from voice_agent.errors import ConfigError

AUDIO_CHUNK_OVERHEAD_BYTES = 512
"""JSON around the base64 of one ``audio_chunk`` event (type, seq, a request id of up to 128 chars, quotes)."""
DEFAULT_AUDIO_CHUNK_BYTES = max_pcm_bytes_for_base64(
    limits.APIGW_FRAME_BYTES, overhead_bytes=AUDIO_CHUNK_OVERHEAD_BYTES
)
"""Largest PCM slice per ``audio_chunk``: its event fits one API Gateway WebSocket frame (32 KB)."""
DEFAULT_FIRST_FRAGMENT_WORDS = 4
"""First-fragment policy: the first piece may end at a clause mark once it holds this many words.
Measured with bench/bench_agent_ttfa.py (see docs/benchmarks.md)."""
DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful voice assistant. Your replies are spoken aloud: answer in short, plain sentences, "
    "with no markdown, lists, code or emoji."
)


class TransportKind(StrEnum):
    """How the agent reaches the Kokoro container."""

    WS = "ws"
    SAGEMAKER = "sagemaker"


class ModelKind(StrEnum):
    """Which model writes the reply."""

    SPEAK = "speak"
    """Offline: streams the prompt back as the reply (no LLM). For demos and tests."""
    BEDROCK = "bedrock"
    OPENAI = "openai"
    """Any OpenAI-compatible server (OpenAI, vLLM, llama.cpp, Ollama's /v1)."""
    OLLAMA = "ollama"
    """An Ollama server, through its OpenAI-compatible /v1 API."""


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """Everything the agent needs to know; every field has a working local default."""

    transport: TransportKind = TransportKind.WS
    tts_url: str = f"ws://127.0.0.1:8000{SESSION_PATH}"
    sagemaker_endpoint: str | None = None
    aws_region: str | None = None
    model: ModelKind = ModelKind.SPEAK
    model_id: str | None = None
    model_base_url: str | None = None
    model_api_key: str | None = field(default=None, repr=False)
    speak_tokens_per_s: float = 40.0
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    voice: str | None = None
    first_fragment_words: int | None = DEFAULT_FIRST_FRAGMENT_WORDS
    max_sentence_chars: int = 300
    audio_chunk_bytes: int = DEFAULT_AUDIO_CHUNK_BYTES
    tts_connect_timeout_s: float = 5.0
    cancel_grace_s: float = 2.0

    def __post_init__(self) -> None:
        if self.transport is TransportKind.SAGEMAKER and not self.sagemaker_endpoint:
            raise ConfigError("the sagemaker transport needs an endpoint name: set VOICE_AGENT_SAGEMAKER_ENDPOINT")
        if self.transport is TransportKind.WS and not self.tts_url.startswith(("ws://", "wss://")):
            raise ConfigError(f"the TTS URL must start with ws:// or wss://; got {self.tts_url!r}")
        if self.model in (ModelKind.OPENAI, ModelKind.OLLAMA) and not self.model_id:
            raise ConfigError(f"the {self.model.value} model needs a model id: pass --model-id or VOICE_AGENT_MODEL_ID")
        if self.speak_tokens_per_s <= 0:
            raise ConfigError(f"speak_tokens_per_s must be positive; got {self.speak_tokens_per_s}")
        if self.first_fragment_words is not None and self.first_fragment_words < 1:
            raise ConfigError("first_fragment_words must be at least 1, or None to turn the policy off")
        if self.audio_chunk_bytes < limits.SAMPLE_WIDTH_BYTES:
            raise ConfigError(f"audio_chunk_bytes must hold at least one sample; got {self.audio_chunk_bytes}")

    @property
    def model_label(self) -> str:
        """What writes the replies, as logs and ``agent_start`` show it."""
        if self.model is ModelKind.SPEAK:
            return "speak (offline echo model: streams the prompt back, no LLM)"
        return f"{self.model.value}:{self.model_id or 'default'}"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AgentConfig:
        """Build from ``VOICE_AGENT_*`` variables (the deployed container's way); unset ones keep defaults."""
        env = os.environ if env is None else env

        def get(name: str) -> str | None:
            value = env.get(f"VOICE_AGENT_{name}")
            return value if value else None

        defaults = cls()
        try:
            first = get("FIRST_FRAGMENT_WORDS")
            return cls(
                transport=TransportKind(get("TRANSPORT") or defaults.transport),
                tts_url=get("TTS_URL") or defaults.tts_url,
                sagemaker_endpoint=get("SAGEMAKER_ENDPOINT"),
                aws_region=get("AWS_REGION") or env.get("AWS_REGION") or None,
                model=ModelKind(get("MODEL") or defaults.model),
                model_id=get("MODEL_ID"),
                model_base_url=get("MODEL_BASE_URL"),
                model_api_key=get("MODEL_API_KEY"),
                speak_tokens_per_s=float(get("SPEAK_TOKENS_PER_S") or defaults.speak_tokens_per_s),
                system_prompt=get("SYSTEM_PROMPT") or defaults.system_prompt,
                voice=get("VOICE"),
                first_fragment_words=defaults.first_fragment_words
                if first is None
                else (None if first in ("0", "off") else int(first)),
            )
        except ValueError as exc:
            raise ConfigError(f"a VOICE_AGENT_* variable has an invalid value: {exc}") from exc


__all__ = [
    "DEFAULT_AUDIO_CHUNK_BYTES",
    "DEFAULT_FIRST_FRAGMENT_WORDS",
    "AgentConfig",
    "ConfigError",
    "ModelKind",
    "TransportKind",
]
