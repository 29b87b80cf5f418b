"""The voice agent's configuration: one frozen record, built from CLI flags or the environment.

Deployed on AgentCore the agent reads ``VOICE_AGENT_*`` environment variables (set by the CDK stack);
locally ``voice-agent --tts-url ws://...`` builds the same record from flags. Nothing else reads the
environment.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from relay_core.agent import defaults as agent_defaults
from relay_core.agent.defaults import AUDIO_CHUNK_BYTES as DEFAULT_AUDIO_CHUNK_BYTES
from relay_core.agent.defaults import FIRST_FRAGMENT_WORDS as DEFAULT_FIRST_FRAGMENT_WORDS
from relay_core.audio_piece import CODECS, Codec
from relay_core.errors import InvalidFieldError
from relay_core.languages import LANG_CODES, parse_lang
from voice_agent.errors import ConfigError

ENV_PREFIX = "VOICE_AGENT_"
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
    """Bedrock's API with the model id ``local.echo``: the local Bedrock stand-in's echo model, which streams the
    prompt back (no LLM), at ``speak_tokens_per_s``. For demos and tests; the same ``BedrockModel`` path as
    ``bedrock``."""
    BEDROCK = "bedrock"
    OPENAI = "openai"
    """Any OpenAI-compatible server (OpenAI, vLLM, llama.cpp, Ollama's /v1)."""
    OLLAMA = "ollama"
    """An Ollama server, through its OpenAI-compatible /v1 API."""


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """Everything the agent needs to know; every field has a working local default."""

    transport: TransportKind = TransportKind.WS
    tts_url: str = agent_defaults.LOCAL_TTS_URL
    sagemaker_endpoint: str | None = None
    aws_region: str | None = None
    model: ModelKind = ModelKind.SPEAK
    model_id: str | None = None
    model_base_url: str | None = None
    model_api_key: str | None = field(default=None, repr=False)
    speak_tokens_per_s: float = agent_defaults.SPEAK_TOKENS_PER_S
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    voice: str | None = None
    lang: str | None = None
    first_fragment_words: int | None = DEFAULT_FIRST_FRAGMENT_WORDS
    max_sentence_chars: int = agent_defaults.MAX_SENTENCE_CHARS
    audio_chunk_bytes: int = DEFAULT_AUDIO_CHUNK_BYTES
    tts_connect_timeout_s: float = agent_defaults.TTS_CONNECT_TIMEOUT_S
    cancel_grace_s: float = agent_defaults.CANCEL_GRACE_S
    tts_capacity_wait_s: float = agent_defaults.TTS_CAPACITY_WAIT_S
    history_bucket: str | None = None
    """The S3 bucket conversations are kept in (Strands' ``S3SessionManager``); None keeps them in memory only."""
    history_prefix: str = agent_defaults.HISTORY_PREFIX
    history_window_messages: int = agent_defaults.HISTORY_WINDOW_MESSAGES

    def __post_init__(self) -> None:
        if self.transport is TransportKind.SAGEMAKER and not self.sagemaker_endpoint:
            raise ConfigError("the sagemaker transport needs an endpoint name: set VOICE_AGENT_SAGEMAKER_ENDPOINT")
        if self.transport is TransportKind.WS:
            check_tts_url(self.tts_url)
        if self.model in (ModelKind.OPENAI, ModelKind.OLLAMA) and not self.model_id:
            raise ConfigError(f"the {self.model.value} model needs a model id: pass --model-id or VOICE_AGENT_MODEL_ID")
        if self.speak_tokens_per_s <= 0:
            raise ConfigError(f"speak_tokens_per_s must be positive; got {self.speak_tokens_per_s}")
        if self.first_fragment_words is not None and self.first_fragment_words < 1:
            raise ConfigError("first_fragment_words must be at least 1, or None to turn the policy off")
        if self.audio_chunk_bytes < CODECS[Codec.PCM_S16LE].cut_unit_bytes():
            raise ConfigError(f"audio_chunk_bytes must hold at least one sample; got {self.audio_chunk_bytes}")
        if self.max_sentence_chars < 1 or self.tts_connect_timeout_s <= 0 or self.cancel_grace_s < 0:
            raise ConfigError("max_sentence_chars, tts_connect_timeout_s and cancel_grace_s must be positive")
        if self.tts_capacity_wait_s < 0:
            raise ConfigError(f"tts_capacity_wait_s must be 0 or more (0: no wait); got {self.tts_capacity_wait_s}")
        if self.history_window_messages < 2:
            raise ConfigError(
                "history_window_messages must be at least 2 (a prompt and its reply); "
                f"got {self.history_window_messages}"
            )

    @property
    def model_label(self) -> str:
        """What writes the replies, as logs and ``agent_start`` show it."""
        if self.model is ModelKind.SPEAK:
            return "speak (local.echo on the local Bedrock stand-in: streams the prompt back, no LLM)"
        return f"{self.model.value}:{self.model_id or 'default'}"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AgentConfig:
        """Build from ``VOICE_AGENT_*`` variables (the deployed container's way); unset ones keep defaults.
        ``AWS_REGION`` is used when ``VOICE_AGENT_AWS_REGION`` is not set."""
        env = os.environ if env is None else env
        values = {s.field: s.parse_env(env) for s in SETTINGS if env.get(s.env_name)}
        if "aws_region" not in values and env.get("AWS_REGION"):
            values["aws_region"] = env["AWS_REGION"]
        return cls(**values)  # type: ignore[arg-type]


BEDROCK_ENDPOINT_VARIABLES = ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL")
"""The standard AWS variables that send boto3's ``bedrock-runtime`` calls elsewhere than Amazon Bedrock (the service's
own first): how an agent reaches the local Bedrock stand-in."""


def check_model_reachable(config: AgentConfig, env: Mapping[str, str]) -> None:
    """Refuse, before serving, a model the agent cannot reach from ``env``: the ``speak`` model (``local.echo``) is
    served only by the local Bedrock stand-in, so without a Bedrock endpoint variable every turn would go to Amazon
    Bedrock and fail. The error says what to run and what to set."""
    if config.model is ModelKind.SPEAK and not any(env.get(name) for name in BEDROCK_ENDPOINT_VARIABLES):
        raise ConfigError(
            f"the speak model ({agent_defaults.LOCAL_ECHO_MODEL_ID}) runs on the local Bedrock stand-in: start it with "
            f"`uv run python -m relay_local.bedrock` and set {BEDROCK_ENDPOINT_VARIABLES[0]}="
            f"{agent_defaults.LOCAL_BEDROCK_URL}, or pick a real model with --model bedrock, openai or ollama"
        )


def check_tts_url(url: str) -> None:
    """A TTS session URL must be ws(s):// and name the session route (a bare host answers 403)."""
    from relay_core.tts.messages import SESSION_PATH  # noqa: PLC0415 - keep the module's import list short

    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in ("ws", "wss"):
        raise ConfigError(f"the TTS URL must start with ws:// or wss://; got {url!r}")
    path = rest.partition("/")[2]
    if not path:
        raise ConfigError(f"the TTS URL needs the session route: use {url.rstrip('/')}{SESSION_PATH}")


def _optional_words(text: str) -> int | None:
    return None if text in ("0", "off") else int(text)


def _lang(text: str) -> str:
    """One of Kokoro's languages, as its code (``relay_core.languages.parse_lang``'s spellings)."""
    try:
        return parse_lang(text).code
    except InvalidFieldError as exc:
        raise ValueError(exc.message) from None


@dataclass(frozen=True, slots=True)
class Setting:
    """One configuration field, with its command-line flag and its environment variable (one to one)."""

    field: str
    parse: Callable[[str], object]
    help: str
    secret: bool = False

    @property
    def flag(self) -> str:
        return "--" + self.field.replace("_", "-")

    @property
    def env_name(self) -> str:
        return ENV_PREFIX + self.field.upper()

    def parse_env(self, env: Mapping[str, str]) -> object:
        return self.parse_text(env[self.env_name], source=self.env_name)

    def parse_text(self, text: str, *, source: str) -> object:
        try:
            return self.parse(text)
        except ValueError as exc:
            raise ConfigError(f"{source} has an invalid value {text!r}: {exc}") from exc


SETTINGS: tuple[Setting, ...] = (
    Setting("transport", TransportKind, "how the agent reaches the TTS: ws (a WebSocket URL) or sagemaker"),
    Setting("tts_url", str, f"the container's TTS session URL (default {agent_defaults.LOCAL_TTS_URL})"),
    Setting("sagemaker_endpoint", str, "SageMaker endpoint name (with transport sagemaker)"),
    Setting("aws_region", str, "AWS region for Bedrock and SageMaker (default: AWS_REGION)"),
    Setting(
        "model",
        ModelKind,
        "speak (local.echo via the Bedrock API: echoes the prompt, no LLM; default), bedrock, openai or ollama",
    ),
    Setting("model_id", str, "model id: a Bedrock model id, or the OpenAI-compatible server's model name"),
    Setting("model_base_url", str, "base URL of an OpenAI-compatible or Ollama server"),
    Setting("model_api_key", str, "API key of an OpenAI-compatible server (prefer the variable)", secret=True),
    Setting("speak_tokens_per_s", float, f"speak model: tokens/s (default {agent_defaults.SPEAK_TOKENS_PER_S:g})"),
    Setting("system_prompt", str, "the agent's system prompt"),
    Setting("voice", str, "voice when a payload names none (default: the container's)"),
    Setting(
        "lang", _lang, f"language replies are read in when a payload names none ({LANG_CODES}; default: the voice's)"
    ),
    Setting(
        "first_fragment_words",
        _optional_words,
        f"words before the first clause cut; 0 or off turns the policy off (default {DEFAULT_FIRST_FRAGMENT_WORDS})",
    ),
    Setting("max_sentence_chars", int, f"longest sentence sent as is (default {agent_defaults.MAX_SENTENCE_CHARS})"),
    Setting("audio_chunk_bytes", int, f"largest PCM slice per audio_chunk (default {DEFAULT_AUDIO_CHUNK_BYTES})"),
    Setting(
        "tts_connect_timeout_s",
        float,
        f"TTS session open timeout, s (default {agent_defaults.TTS_CONNECT_TIMEOUT_S:g})",
    ),
    Setting(
        "cancel_grace_s",
        float,
        f"s a cancelled model may take to stop (default {agent_defaults.CANCEL_GRACE_S:g})",
    ),
    Setting(
        "tts_capacity_wait_s",
        float,
        f"s a turn retries an older TTS container that refuses sessions (1013) before tts_at_capacity (default "
        f"{agent_defaults.TTS_CAPACITY_WAIT_S:g}; 0: no wait)",
    ),
    Setting(
        "history_bucket",
        str,
        "S3 bucket that keeps each conversation's history across restarts (default: none, memory only; "
        "AWS_ENDPOINT_URL_S3 points it at another S3 endpoint)",
    ),
    Setting(
        "history_prefix", str, f"key prefix of the history in that bucket (default {agent_defaults.HISTORY_PREFIX})"
    ),
    Setting(
        "history_window_messages",
        int,
        f"messages of a conversation the model sees, oldest dropped first (default "
        f"{agent_defaults.HISTORY_WINDOW_MESSAGES})",
    ),
)
"""Every :class:`AgentConfig` field, as ``--field-name`` and ``VOICE_AGENT_FIELD_NAME``."""


__all__ = [
    "BEDROCK_ENDPOINT_VARIABLES",
    "DEFAULT_AUDIO_CHUNK_BYTES",
    "DEFAULT_FIRST_FRAGMENT_WORDS",
    "ENV_PREFIX",
    "SETTINGS",
    "AgentConfig",
    "ConfigError",
    "ModelKind",
    "Setting",
    "TransportKind",
    "check_model_reachable",
    "check_tts_url",
]
