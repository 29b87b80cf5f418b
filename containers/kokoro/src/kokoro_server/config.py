"""The server's settings: one frozen :class:`ServerConfig`, read from the environment or built by the CLI.

Environment variables (all optional):

- ``KOKORO_ENGINE``: ``onnx`` (default) or ``torch``.
- ``KOKORO_MODEL_PATH``, ``KOKORO_VOICES_PATH``: an ONNX model and voice packs by path (onnx).
- ``KOKORO_WEIGHTS_DIR``: the torch weights directory (config.json, one .pth, voices/*.pt). When the torch engine is
  chosen without it and SageMaker's model directory ``/opt/ml/model`` exists, that directory is used.
- ``KOKORO_DEVICE``: torch device (default: cuda when present).
- ``KOKORO_DEFAULT_VOICE``, ``KOKORO_LANG`` (espeak-ng language, default ``en-us``).
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
- ``KOKORO_MAX_SESSIONS``: WebSocket sessions served at once; beyond it new ones are refused with 1013 and
  ``/ping`` says ``busy`` (default: 4 per core for onnx, 64 for torch; see docs/server.md).
- ``KOKORO_CORS_ORIGINS``: comma-separated origins (or ``*``) that browsers may call the HTTP routes from; unset
  (the default) means no CORS headers at all.
- ``KOKORO_METRICS_ENDPOINT``: an endpoint name; each finished session request then writes one CloudWatch EMF line
  (first audio, duration, audio seconds) to standard output (kokoro_server.session_metrics).
- ``KOKORO_HOST``, ``KOKORO_PORT``: where ``kokoro-server`` listens (default 127.0.0.1:8081, the port the voice
  agent's default TTS URL points at; ``kokoro-server serve`` and the images use 0.0.0.0:8080).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from kokoro_server.engines import EngineConfig
from kokoro_server.policy import DEFAULT_FIRST_FRAGMENT_WORDS, SpeechPolicy
from kokoro_server.silence import SilencePolicy
from relay_core.agent import defaults as agent_defaults

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
        """Settings from ``KOKORO_*`` variables (see the module docstring); unset ones keep their defaults."""
        env = os.environ if environ is None else environ

        def text(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        def path(name: str) -> Path | None:
            value = text(name)
            return None if value is None else Path(value)

        def number(name: str) -> int | None:
            value = text(name)
            if value is None:
                return None
            try:
                return int(value)
            except ValueError as exc:
                raise ConfigError(f"{name}={value!r} is not a whole number: set it to one, or unset it") from exc

        def switch(name: str, default: bool) -> bool:
            value = (text(name) or "").lower()
            if not value:
                return default
            if value in {"on", "true", "1", "yes"}:
                return True
            if value in {"off", "false", "0", "no"}:
                return False
            raise ConfigError(f"{name}={value!r}: use on or off")

        def decimal(name: str) -> float | None:
            value = text(name)
            if value is None:
                return None
            try:
                return float(value)
            except ValueError as exc:
                raise ConfigError(f"{name}={value!r} is not a number of milliseconds: set one, or unset it") from exc

        fragment = text("KOKORO_FIRST_FRAGMENT_WORDS")
        fragment_words = (
            DEFAULT_FIRST_FRAGMENT_WORDS
            if fragment is None
            else 0
            if fragment.lower() == "off"
            else number("KOKORO_FIRST_FRAGMENT_WORDS")
        )
        stream = (text("KOKORO_STREAM_DECODER") or "on").lower()
        stream = {"true": "on", "1": "on", "yes": "on", "false": "off", "0": "off", "no": "off"}.get(stream, stream)
        if stream not in {"on", "off", "every"}:
            raise ConfigError(f"KOKORO_STREAM_DECODER={stream!r}: use on, every or off")
        engine = (text("KOKORO_ENGINE") or "onnx").lower()
        if engine not in ENGINE_NAMES:
            raise ConfigError(f"KOKORO_ENGINE={engine!r} is unknown: use one of {', '.join(ENGINE_NAMES)}")
        weights_dir = path("KOKORO_WEIGHTS_DIR")
        if engine == "torch" and weights_dir is None and SAGEMAKER_MODEL_DIR.is_dir():
            weights_dir = SAGEMAKER_MODEL_DIR
        return cls(
            engine="torch" if engine == "torch" else "onnx",
            model_path=path("KOKORO_MODEL_PATH"),
            voices_path=path("KOKORO_VOICES_PATH"),
            weights_dir=weights_dir,
            device=text("KOKORO_DEVICE"),
            default_voice=text("KOKORO_DEFAULT_VOICE"),
            lang=text("KOKORO_LANG") or "en-us",
            threads=number("KOKORO_THREADS"),
            workers=number("KOKORO_WORKERS"),
            cors_origins=cls.parse_origins(text("KOKORO_CORS_ORIGINS") or ""),
            host=text("KOKORO_HOST") or LOCAL_HOST,
            port=LOCAL_PORT if (port := number("KOKORO_PORT")) is None else port,
            silence=switch("KOKORO_SILENCE", True),
            stream_decoder=stream != "off",
            stream_every_segment=stream == "every",
            sentence_pause_ms=decimal("KOKORO_SENTENCE_PAUSE_MS"),
            paragraph_pause_ms=decimal("KOKORO_PARAGRAPH_PAUSE_MS"),
            clause_pause_ms=decimal("KOKORO_CLAUSE_PAUSE_MS"),
            first_fragment_words=fragment_words,
            max_sessions=number("KOKORO_MAX_SESSIONS"),
            metrics_endpoint=text("KOKORO_METRICS_ENDPOINT"),
        )

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
        )
