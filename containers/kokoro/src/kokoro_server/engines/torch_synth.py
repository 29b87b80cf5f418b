"""The PyTorch synthesizer (the GPU production path): the ``kokoro`` package's ``KModel``.

Weights come from a local directory only (``config.json``, one ``*.pth``, ``voices/*.pt``); the
config and checkpoint paths are always passed explicitly, so ``KModel`` never reaches the Hugging Face
hub. ``KModel`` quietly skips checkpoint entries it cannot load strictly, so the checkpoint is checked
against the model's own parameter names first: a half-converted checkpoint fails at load time.
"""

from __future__ import annotations

import json
import math
import pickle
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from kokoro.model import KModel

from kokoro_server.engines.base import SAMPLE_RATE, Rendered
from kokoro_server.engines.errors import InferenceError, ModelFilesError

REPO_ID = "hexgrad/Kokoro-82M"
"""Only a label for ``KModel`` (it selects nothing, since config and weights are local files)."""

_MODULES = ("bert", "bert_encoder", "predictor", "text_encoder", "decoder")


def weights_files(weights_dir: Path) -> tuple[Path, Path]:
    """The ``config.json`` and the single ``*.pth`` checkpoint in ``weights_dir``."""
    config = weights_dir / "config.json"
    checkpoints = sorted(weights_dir.glob("*.pth"))
    if not config.is_file():
        raise ModelFilesError(f"{config} is missing: weights_dir must hold config.json, one *.pth and voices/")
    if len(checkpoints) != 1:
        raise ModelFilesError(
            f"{weights_dir} holds {len(checkpoints)} *.pth files, expected exactly one: remove the extra ones"
        )
    return config, checkpoints[0]


def read_config(path: Path) -> dict[str, Any]:
    """The model config (hidden sizes, vocabulary, ...) from ``config.json``."""
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ModelFilesError(f"cannot read {path} ({exc}): copy a Kokoro config.json there") from exc
    if not isinstance(config, dict) or not isinstance(config.get("vocab"), dict):
        raise ModelFilesError(f"{path} has no 'vocab' mapping: copy a Kokoro config.json there")
    return config


def frame_samples(config: Mapping[str, Any]) -> int:
    """Audio samples per duration frame for ``config``: the decoder's 2x upsampling times the iSTFT
    generator's ``prod(upsample_rates) * gen_istft_hop_size`` (600 for Kokoro-82M)."""
    istft = config.get("istftnet", {})
    try:
        product = math.prod(int(rate) for rate in istft["upsample_rates"]) * int(istft["gen_istft_hop_size"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFilesError(
            f"config.json has no usable istftnet upsample_rates/gen_istft_hop_size ({exc}): use a Kokoro config.json"
        ) from exc
    return 2 * product


def _check_checkpoint(model: torch.nn.Module, checkpoint: Mapping[str, Any], path: Path) -> None:
    missing_modules = [name for name in _MODULES if name not in checkpoint]
    if missing_modules:
        raise ModelFilesError(f"checkpoint {path} lacks {missing_modules}: convert the weights again")
    for name in _MODULES:
        expected = set(getattr(model, name).state_dict())
        stored = {key.removeprefix("module.") for key in checkpoint[name]}
        if expected != stored:
            absent = sorted(expected - stored)[:3]
            extra = sorted(stored - expected)[:3]
            raise ModelFilesError(
                f"checkpoint {path} does not match the config for {name!r} "
                f"(missing {absent}, unexpected {extra}): convert the weights again with this config"
            )


class TorchSynthesizer:
    """Kokoro-82M on PyTorch (CUDA when available, else CPU). Concurrent :meth:`infer` calls are safe.

    Unlike the ONNX export, ``KModel``'s vocoder draws random excitation noise and phase on every
    call, so two renders of the same segment differ slightly (same length, same speech).
    """

    name = "torch"
    sample_rate = SAMPLE_RATE

    def __init__(self, weights_dir: Path, *, device: str | None = None, threads: int | None = None) -> None:
        """Load ``config.json`` and the ``*.pth`` in ``weights_dir`` onto ``device`` (default: cuda if present)."""
        config_path, checkpoint_path = weights_files(weights_dir)
        config = read_config(config_path)
        if threads is not None:
            torch.set_num_threads(threads)
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        try:
            checkpoint = torch.load(checkpoint_path, map_location="cpu", weights_only=True)
            model = KModel(repo_id=REPO_ID, config=config, model=str(checkpoint_path))
            if not isinstance(checkpoint, Mapping):
                raise ModelFilesError(f"checkpoint {checkpoint_path} is not a dict of module state dicts")
            _check_checkpoint(model, checkpoint, checkpoint_path)
            self.model: KModel = model.eval().to(self.device)
        except (
            OSError,
            EOFError,
            pickle.UnpicklingError,
            RuntimeError,
            KeyError,
            ValueError,
            TypeError,
            AssertionError,
        ) as exc:
            raise ModelFilesError(
                f"cannot load Kokoro weights from {weights_dir} ({type(exc).__name__}: {exc}): "
                "check that config.json and the checkpoint belong together"
            ) from exc
        self.vocab: dict[str, int] = dict(config["vocab"])
        self.frame_samples = frame_samples(config)
        self.weights_dir = weights_dir

    def infer(self, tokens: Sequence[int], style: npt.NDArray[np.float32], speed: float) -> npt.NDArray[np.float32]:
        """One forward pass; returns float32 mono audio at 24 kHz."""
        return self.infer_timed(tokens, style, speed).audio

    def infer_timed(self, tokens: Sequence[int], style: npt.NDArray[np.float32], speed: float) -> Rendered:
        """One forward pass: the audio and ``KModel``'s predicted frames per token (padding included)."""
        input_ids = torch.tensor([[0, *tokens, 0]], dtype=torch.long, device=self.device)
        ref_s = torch.from_numpy(np.array(style, dtype=np.float32).reshape(1, -1)).to(self.device)
        try:
            with torch.inference_mode():
                audio, pred_dur = self.model.forward_with_tokens(input_ids, ref_s, speed)
        except RuntimeError as exc:
            raise InferenceError(
                f"torch inference failed on {len(tokens)} tokens ({exc}): retry or shorten the text"
            ) from exc
        result: npt.NDArray[np.float32] = (
            audio.detach().float().cpu().numpy().reshape(-1).astype(np.float32, copy=False)
        )
        durations = tuple(int(frames) for frames in pred_dur.detach().cpu().reshape(-1).tolist())
        return Rendered(audio=result, durations=durations, frame_samples=self.frame_samples)
