"""The server's settings: one frozen :class:`ServerConfig`, read from the environment or built by the CLI.

Environment variables (all optional):

- ``KOKORO_ENGINE``: ``onnx`` (default) or ``torch``.
- ``KOKORO_MODEL_PATH``, ``KOKORO_VOICES_PATH``: an ONNX model and voice packs by path (onnx).
- ``KOKORO_WEIGHTS_DIR``: the torch weights directory (config.json, one .pth, voices/*.pt). When the torch engine is
  chosen without it and SageMaker's model directory ``/opt/ml/model`` exists, that directory is used.
- ``KOKORO_DEVICE``: torch device (default: cuda when present).
- ``KOKORO_DEFAULT_VOICE``, ``KOKORO_LANG`` (espeak-ng language, default ``en-us``).
- ``KOKORO_INSTALLED_VOICES``: ``on`` (default) loads the voice packs installed in the cache (``kokoro-server voices
  install``/``fetch``, ``$KOKORO_RELAY_CACHE/voices``) beside the embedded ones, when ``KOKORO_VOICES_PATH`` is
  unset; ``off`` loads the embedded (or given) ones only.
- ``KOKORO_THREADS``: CPU threads per inference (default: every core).
- ``KOKORO_WORKERS``: inference worker threads of the scheduler (default 1 for onnx, so one segment gets every
  core; 2 for torch; see docs/server.md).
- ``KOKORO_SILENCE``: ``on`` (default) trims the model's padding and places pauses by policy; ``off`` sends the
  model's raw output. ``KOKORO_SENTENCE_PAUSE_MS`` (default 250), ``KOKORO_PARAGRAPH_PAUSE_MS`` (default 380),
  ``KOKORO_CLAUSE_PAUSE_MS`` (default 120): the pauses (kokoro_server.silence).
- ``KOKORO_FIRST_FRAGMENT_WORDS``: the first segment of a session that has heard nothing yet ends at the first
  clause mark or phrase boundary after this many words, when that segment is decoded whole (streaming off, or an
  engine that cannot stream; default 4; ``0`` or ``off`` turns it off).
- ``KOKORO_STREAM_DECODER``: ``on`` (default) decodes a segment a listener is waiting on (the first sound of a
  session, or a long segment right after a short one) in chunks and sends each chunk's audio as it exists, every
  other segment whole; ``every`` streams every segment (docs/server.md, streaming within a segment); ``off`` renders
  whole segments (an engine that cannot stream always does).
- ``KOKORO_MAX_SESSIONS``: WebSocket sessions served at once; beyond it new ones wait in the admission queue,
  first come first served, and ``/ping`` says ``busy`` (default: 4 per core for onnx, 64 for torch; see
  docs/server.md).
- ``KOKORO_QUEUE_WAIT_S``: how long a session waits in that queue for a slot before it ends with ``at_capacity``
  (default 120 seconds, longer than a long turn on a small CPU instance; 0: never wait).
- ``KOKORO_CORS_ORIGINS``: comma-separated origins (or ``*``) that browsers may call the HTTP routes from; unset
  (the default) means no CORS headers at all.
- ``KOKORO_METRICS_ENDPOINT``: an endpoint name; each finished session request then writes one CloudWatch EMF line
  (first audio, duration, audio seconds) to standard output (kokoro_server.session_metrics).
- ``KOKORO_HOST``, ``KOKORO_PORT``: where ``kokoro-server`` listens (default 127.0.0.1:8081, the port the voice
  agent's default TTS URL points at; ``kokoro-server serve`` and the images use 0.0.0.0:8080).

Each setting is declared once, in :data:`SETTINGS`: its field, its variable, how the variable's text is read, and
its ``kokoro-server`` option when it has one. :meth:`ServerConfig.from_env`, the command line's parser and
``kokoro_server.cli.config_from_args`` are all read from that table.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, cast

from kokoro_server.engines import EngineConfig
from kokoro_server.policy import DEFAULT_FIRST_FRAGMENT_WORDS, SpeechPolicy
from kokoro_server.silence import SilencePolicy
from relay_core.agent import defaults as agent_defaults
from relay_core.cli_usage import given_path, non_empty

SAGEMAKER_MODEL_DIR = Path("/opt/ml/model")
"""Where SageMaker unpacks the model artefacts (the torch weights cache) inside the container."""
SAGEMAKER_HOST = "0.0.0.0"
SAGEMAKER_PORT = agent_defaults.IMAGE_PORT
"""What ``kokoro-server serve`` (the images, SageMaker) listens on."""
LOCAL_HOST = agent_defaults.LOCAL_HOST
LOCAL_PORT = agent_defaults.LOCAL_TTS_PORT
"""``kokoro-server``'s local default: where the voice agent's default TTS URL points, so both run with no flags."""

EngineName = Literal["onnx", "torch"]
ENGINE_NAMES: tuple[EngineName, ...] = ("onnx", "torch")


DEFAULT_QUEUE_WAIT_S = 120.0
"""Seconds a session waits for a slot by default (``KOKORO_QUEUE_WAIT_S``): longer than a long turn on a small CPU
instance, so a crowd queues through a wave of turns instead of failing (docs/capacity.md)."""


class ConfigError(ValueError):
    """A setting has a value the server cannot use; the message names the setting and what to put there."""


def default_workers(engine: EngineName, cpu_count: int | None = None) -> int:
    """Inference worker threads by default: latency first.

    onnx on CPU: 1, with every core as ONNX Runtime intra-op threads, so one segment renders as fast as the
    machine allows and the scheduler's priority (a session waiting for its first sound goes first) decides what
    runs next. Several workers with every core each oversubscribe the cores and make every single segment slower;
    they buy throughput (measured on 2 cores: 16 sessions get 0.84 of the raw engine's throughput with 1 worker,
    0.94-0.975 with 3; docs/benchmarks.md), which ``KOKORO_WORKERS`` still offers. torch: 2, so host work overlaps
    device work on a GPU. ``cpu_count`` is accepted for symmetry with :func:`default_max_sessions`.
    """
    del cpu_count
    return 2 if engine == "torch" else 1


def default_max_sessions(engine: EngineName, cpu_count: int | None = None) -> int:
    """WebSocket sessions admitted at once by default: 4 per core on CPU (onnx), 64 on a GPU (torch).

    On 2 cores the machine makes about 3.3 audio seconds per second; a voice session speaks about half of the
    time, so 8 sessions keep it busy without queueing each listener's first sound behind more than a few short
    first fragments (bench/bench_first_sound.py; docs/benchmarks.md).
    """
    if engine == "torch":
        return 64
    return 4 * max(1, cpu_count or os.cpu_count() or 1)


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Everything the app needs to start: which engine, where its files are, and how to schedule inference."""

    engine: EngineName = "onnx"
    model_path: Path | None = None
    voices_path: Path | None = None
    weights_dir: Path | None = None
    device: str | None = None
    default_voice: str | None = None
    installed_voices: bool | None = None
    """Load the packs installed in the cache beside the embedded ones; None = ``KOKORO_INSTALLED_VOICES`` as the
    engine reads it (on unless ``off``)."""
    lang: str = "en-us"
    threads: int | None = None
    workers: int | None = None
    """Inference worker threads; None = :func:`default_workers` for the engine."""
    host: str = LOCAL_HOST
    port: int = LOCAL_PORT
    cors_origins: tuple[str, ...] = ()
    """Origins allowed to call the HTTP routes from a browser (``("*",)`` for any); empty = CORS off."""
    silence: bool = True
    """Trim the model's padding and place pauses by policy (kokoro_server.silence)."""
    sentence_pause_ms: float | None = None
    paragraph_pause_ms: float | None = None
    clause_pause_ms: float | None = None
    first_fragment_words: int | None = DEFAULT_FIRST_FRAGMENT_WORDS
    """The container's first-fragment default; 0 or None turns it off."""
    stream_decoder: bool = True
    """``KOKORO_STREAM_DECODER`` on (the default): decode the segments a listener waits on chunk by chunk, each chunk
    sent as it exists (:meth:`kokoro_server.policy.SpeechPolicy.streams_segment`)."""
    stream_every_segment: bool = False
    """``KOKORO_STREAM_DECODER=every``: with :attr:`stream_decoder`, stream every segment."""
    max_sessions: int | None = None
    """WebSocket sessions served at once; None = :func:`default_max_sessions` for the engine."""
    queue_wait_s: float = DEFAULT_QUEUE_WAIT_S
    """Seconds a session past :attr:`max_sessions` waits for a slot before it ends with ``at_capacity``."""
    metrics_endpoint: str | None = None
    """``KOKORO_METRICS_ENDPOINT``: when set, each finished session request writes a CloudWatch EMF line with this
    endpoint name as its dimension (kokoro_server.session_metrics); unset = no metric lines."""

    def __post_init__(self) -> None:
        if self.engine not in ENGINE_NAMES:
            raise ConfigError(f"engine {self.engine!r} is unknown: use one of {', '.join(ENGINE_NAMES)}")
        if self.workers is not None and self.workers < 1:
            raise ConfigError(f"workers={self.workers}: use at least 1 inference worker")
        if self.threads is not None and self.threads < 1:
            raise ConfigError(f"threads={self.threads}: use a positive number, or leave it unset for every core")
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"port {self.port} is out of range: use 0..65535")
        if self.max_sessions is not None and self.max_sessions < 1:
            raise ConfigError(f"max_sessions={self.max_sessions}: admit at least 1 session")
        if not self.queue_wait_s >= 0:
            raise ConfigError(f"queue_wait_s={self.queue_wait_s}: use 0 (never wait) or a number of seconds")
        if self.first_fragment_words is not None and self.first_fragment_words < 0:
            raise ConfigError(f"first_fragment_words={self.first_fragment_words}: use 0 (off) or a positive number")
        try:
            self.speech_policy  # noqa: B018 - validates the pause settings
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
        for origin in self.cors_origins:
            if origin != "*" and not origin.startswith(("http://", "https://")):
                raise ConfigError(
                    f"CORS origin {origin!r} is not an origin: use scheme://host[:port] (e.g. http://localhost:3000) "
                    "or '*'"
                )

    @staticmethod
    def parse_origins(text: str) -> tuple[str, ...]:
        """``"http://a, https://b"`` → ``("http://a", "https://b")`` (a trailing slash is dropped)."""
        return tuple(origin.strip().rstrip("/") for origin in text.split(",") if origin.strip())

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ServerConfig:
        """Settings from ``KOKORO_*`` variables (see the module docstring); unset or blank ones keep their defaults.
        The torch engine with no weights directory uses SageMaker's model directory when there is one."""
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        for setting in SETTINGS:
            values.update(setting.read(env))
        if values.get("engine") == "torch" and "weights_dir" not in values and SAGEMAKER_MODEL_DIR.is_dir():
            values["weights_dir"] = SAGEMAKER_MODEL_DIR
        return cls(**values)  # type: ignore[arg-type]

    @property
    def inference_workers(self) -> int:
        """The worker threads the scheduler gets: the setting, or the engine's default."""
        return self.workers if self.workers is not None else default_workers(self.engine)

    @property
    def session_limit(self) -> int:
        """The WebSocket sessions admitted at once: the setting, or the engine's default."""
        return self.max_sessions if self.max_sessions is not None else default_max_sessions(self.engine)

    @property
    def speech_policy(self) -> SpeechPolicy:
        """The silence and first-fragment policy these settings describe (raises ValueError on bad pauses)."""
        base = SilencePolicy()
        silence = SilencePolicy(
            enabled=self.silence,
            sentence_pause_ms=base.sentence_pause_ms if self.sentence_pause_ms is None else self.sentence_pause_ms,
            paragraph_pause_ms=base.paragraph_pause_ms if self.paragraph_pause_ms is None else self.paragraph_pause_ms,
            clause_pause_ms=base.clause_pause_ms if self.clause_pause_ms is None else self.clause_pause_ms,
        )
        return SpeechPolicy(
            silence=silence,
            first_fragment_words=self.first_fragment_words or None,
            stream_decoder=self.stream_decoder,
            stream_every_segment=self.stream_every_segment,
        )

    def with_overrides(self, **changes: object) -> ServerConfig:
        """A copy with the given settings replaced; ``None`` values leave a setting as it is."""
        kept = {name: value for name, value in changes.items() if value is not None}
        return replace(self, **kept)  # type: ignore[arg-type]

    def engine_config(self) -> EngineConfig:
        """The engine part of these settings."""
        return EngineConfig(
            engine=self.engine,
            model_path=self.model_path,
            voices_path=self.voices_path,
            weights_dir=self.weights_dir,
            device=self.device,
            lang=self.lang,
            threads=self.threads,
            default_voice=self.default_voice,
            installed_voices=self.installed_voices,
        )


@dataclass(frozen=True, slots=True)
class Flag:
    """A setting's ``kokoro-server`` option. ``help`` may name ``{host}`` and ``{port}``: the defaults of the
    command it is part of (``kokoro-server`` or ``kokoro-server serve``)."""

    name: str
    help: str
    type: Callable[[str], object] = str
    choices: Sequence[str] | None = None

    @property
    def dest(self) -> str:
        """The attribute argparse gives the option's value (``--weights-dir`` → ``weights_dir``)."""
        return self.name.removeprefix("--").replace("-", "_")


@dataclass(frozen=True, slots=True)
class Setting:
    """One setting: the :class:`ServerConfig` field it sets (two for ``KOKORO_STREAM_DECODER``, whose ``parse``
    then returns both values), its ``KOKORO_*`` variable, how the variable's text is read (``parse`` raises
    ``ValueError`` with what follows ``NAME=`` in the message), and its command-line option, if it has one."""

    field: str | tuple[str, ...]
    env: str
    parse: Callable[[str], object]
    flag: Flag | None = None

    def fields_of(self, value: object) -> dict[str, object]:
        """The field values ``value`` (this setting's, parsed) gives; none for ``None`` (left as it is)."""
        if value is None:
            return {}
        if isinstance(self.field, str):
            return {self.field: value}
        return dict(zip(self.field, cast(tuple[object, ...], value), strict=True))

    def read(self, env: Mapping[str, str]) -> dict[str, object]:
        """The field values the variable sets; none when it is unset or blank. Raises :class:`ConfigError`."""
        text = env.get(self.env, "").strip()
        if not text:
            return {}
        try:
            return self.fields_of(self.parse(text))
        except ValueError as exc:
            raise ConfigError(f"{self.env}={exc}") from exc


def _engine_name(text: str) -> EngineName:
    name = text.lower()
    if name not in ENGINE_NAMES:
        raise ValueError(f"{name!r} is unknown: use one of {', '.join(ENGINE_NAMES)}")
    return "torch" if name == "torch" else "onnx"


def _whole_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a whole number: set it to one, or unset it") from None


def _milliseconds(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number of milliseconds: set one, or unset it") from None


def _seconds(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number of seconds: set one, or unset it") from None


def _switch(text: str) -> bool:
    value = text.lower()
    if value in {"on", "true", "1", "yes"}:
        return True
    if value in {"off", "false", "0", "no"}:
        return False
    raise ValueError(f"{value!r}: use on or off")


def _words_or_off(text: str) -> int:
    return 0 if text.lower() == "off" else _whole_number(text)


def _stream_decoder(text: str) -> tuple[bool, bool]:
    """``on`` / ``every`` / ``off`` (or a switch's other spellings) → (``stream_decoder``, ``stream_every_segment``)."""
    mode = text.lower()
    mode = {"true": "on", "1": "on", "yes": "on", "false": "off", "0": "off", "no": "off"}.get(mode, mode)
    if mode not in {"on", "off", "every"}:
        raise ValueError(f"{mode!r}: use on, every or off")
    return mode != "off", mode == "every"


SETTINGS: tuple[Setting, ...] = (
    Setting("host", "KOKORO_HOST", str, Flag("--host", "address to listen on (default {host})", non_empty)),
    Setting("port", "KOKORO_PORT", _whole_number, Flag("--port", "port (default {port}; 0 picks a free one)", int)),
    Setting(
        "engine",
        "KOKORO_ENGINE",
        _engine_name,
        Flag("--engine", "inference backend (default KOKORO_ENGINE or onnx)", choices=ENGINE_NAMES),
    ),
    Setting(
        "model_path",
        "KOKORO_MODEL_PATH",
        Path,
        Flag("--model", "ONNX model file (default: the embedded int8 Kokoro-82M)", given_path),
    ),
    Setting(
        "voices_path",
        "KOKORO_VOICES_PATH",
        Path,
        Flag("--voices", "voice packs (.npz/.bin file, or a directory of .pt)", given_path),
    ),
    Setting(
        "weights_dir",
        "KOKORO_WEIGHTS_DIR",
        Path,
        Flag("--weights-dir", "torch weights directory (config.json, .pth, voices/)", given_path),
    ),
    Setting(
        "default_voice",
        "KOKORO_DEFAULT_VOICE",
        str,
        Flag("--default-voice", "voice used when a request names none", non_empty),
    ),
    Setting(
        "lang", "KOKORO_LANG", str, Flag("--lang", "espeak-ng language of the G2P front end (default en-us)", non_empty)
    ),
    Setting(
        "workers",
        "KOKORO_WORKERS",
        _whole_number,
        Flag("--workers", "inference worker threads (default: 1 for onnx; 2 for torch)", int),
    ),
    Setting(
        "threads",
        "KOKORO_THREADS",
        _whole_number,
        Flag("--threads", "CPU threads per inference (default: every core)", int),
    ),
    Setting(
        "cors_origins",
        "KOKORO_CORS_ORIGINS",
        ServerConfig.parse_origins,
        Flag(
            "--cors-origins",
            "comma-separated origins allowed to call the HTTP routes from a browser, or '*' "
            "(default KOKORO_CORS_ORIGINS or none: CORS off)",
            ServerConfig.parse_origins,
        ),
    ),
    Setting("device", "KOKORO_DEVICE", str),
    Setting("installed_voices", "KOKORO_INSTALLED_VOICES", _switch),
    Setting("silence", "KOKORO_SILENCE", _switch),
    Setting("sentence_pause_ms", "KOKORO_SENTENCE_PAUSE_MS", _milliseconds),
    Setting("paragraph_pause_ms", "KOKORO_PARAGRAPH_PAUSE_MS", _milliseconds),
    Setting("clause_pause_ms", "KOKORO_CLAUSE_PAUSE_MS", _milliseconds),
    Setting("first_fragment_words", "KOKORO_FIRST_FRAGMENT_WORDS", _words_or_off),
    Setting(("stream_decoder", "stream_every_segment"), "KOKORO_STREAM_DECODER", _stream_decoder),
    Setting("max_sessions", "KOKORO_MAX_SESSIONS", _whole_number),
    Setting("queue_wait_s", "KOKORO_QUEUE_WAIT_S", _seconds),
    Setting("metrics_endpoint", "KOKORO_METRICS_ENDPOINT", str),
)
"""Every setting of :class:`ServerConfig`, once: the options in the order ``kokoro-server --help`` lists them, then
the settings only a variable sets."""
