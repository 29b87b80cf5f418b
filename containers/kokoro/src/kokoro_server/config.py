"""The server's settings: one frozen :class:`ServerConfig`, read from the environment or built by the CLI.

Environment variables (all optional):

- ``KOKORO_ENGINE``: ``onnx`` (default) or ``torch``.
- ``KOKORO_MODEL_PATH``, ``KOKORO_VOICES_PATH``: an ONNX model and voice packs by path (onnx).
- ``KOKORO_WEIGHTS_DIR``: the torch weights directory (config.json, one .pth, voices/*.pt). When the torch engine is
  chosen without it and SageMaker's model directory ``/opt/ml/model`` exists, that directory is used.
- ``KOKORO_DEVICE``: torch device (default: cuda when present).
- ``KOKORO_DEFAULT_VOICE``, ``KOKORO_LANG`` (espeak-ng language, default ``en-us``).
- ``KOKORO_THREADS``: CPU threads per inference (default: every core).
- ``KOKORO_WORKERS``: inference worker threads of the scheduler (default 1; see docs/server.md).
- ``KOKORO_CORS_ORIGINS``: comma-separated origins (or ``*``) that browsers may call the HTTP routes from; unset
  (the default) means no CORS headers at all.
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
from relay_core import agent_defaults

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
    """Inference worker threads by default.

    onnx on CPU: one more than the cores (at most 8). Parts of the Kokoro graph (the LSTMs, many small ops) leave
    ONNX Runtime's intra-op threads idle, so an extra inference in flight keeps the cores busy. Measured on 2
    cores (bench/bench_concurrency.py, bench/bench_server.py; docs/benchmarks.md): 16 sessions get 0.84 of the raw
    engine's throughput with 1 worker, 0.87 with 2, 0.94-0.975 with 3; peak RSS with 4 busy sessions is 477, 511
    and 561-589 MB. One session still runs one segment at a time, so its latency is unchanged. torch: 2, so host work
    overlaps device work on a GPU.
    """
    if engine == "torch":
        return 2
    return max(1, min(8, (cpu_count or os.cpu_count() or 1) + 1))


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

    def __post_init__(self) -> None:
        if self.engine not in ENGINE_NAMES:
            raise ConfigError(f"engine {self.engine!r} is unknown: use one of {', '.join(ENGINE_NAMES)}")
        if self.workers is not None and self.workers < 1:
            raise ConfigError(f"workers={self.workers}: use at least 1 inference worker")
        if self.threads is not None and self.threads < 1:
            raise ConfigError(f"threads={self.threads}: use a positive number, or leave it unset for every core")
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"port {self.port} is out of range: use 0..65535")
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
        )

    @property
    def inference_workers(self) -> int:
        """The worker threads the scheduler gets: the setting, or the engine's default."""
        return self.workers if self.workers is not None else default_workers(self.engine)

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
