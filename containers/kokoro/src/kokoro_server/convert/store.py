"""Write converted weights as a normal Kokoro weights directory, and cache it once per model.

Layout (what ``kokoro.KModel`` and the torch engine load)::

    config.json  kokoro-v1_0.pth  voices/<name>.pt   (each voice a float32 [510, 1, 256] tensor)

Directories are built under a temporary name and renamed into place, so a reader sees either
nothing or a complete directory.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch

from kokoro_server.convert.converter import ConversionResult, convert_onnx_to_kmodel
from kokoro_server.engines.model_files import (
    assemble_int8_model,
    default_cache_dir,
    default_voices_path,
    expected_sha256,
)

CHECKPOINT_NAME = "kokoro-v1_0.pth"
VOICE_SHAPE = (510, 1, 256)


def _write_voices(voices_npz: Path, directory: Path) -> list[str]:
    directory.mkdir(parents=True, exist_ok=True)
    names: list[str] = []
    with np.load(voices_npz, allow_pickle=False) as archive:
        for name in archive.files:
            pack = np.asarray(archive[name], dtype=np.float32).reshape(VOICE_SHAPE)
            torch.save(torch.from_numpy(pack.copy()), directory / f"{name}.pt")
            names.append(name)
    return names


def write_weights_dir(result: ConversionResult, voices_npz: Path, target: Path) -> Path:
    """Write ``result`` and the voices of ``voices_npz`` as a weights directory at ``target``.

    Built in a sibling temporary directory and renamed into place; an existing ``target``
    is replaced.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}-"))
    try:
        (staging / "config.json").write_text(json.dumps(result.config, ensure_ascii=False, indent=2), encoding="utf-8")
        torch.save(result.state_dicts, staging / CHECKPOINT_NAME)
        _write_voices(voices_npz, staging / "voices")
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return target


def converted_weights_path(cache_dir: Path | None = None) -> Path:
    """Where the converted weights of the pinned int8 model live (whether or not built yet)."""
    base = cache_dir if cache_dir is not None else default_cache_dir()
    return base / "torch-weights" / expected_sha256()[:16]


def is_weights_dir(path: Path) -> bool:
    """Whether ``path`` holds a complete weights directory of this layout."""
    return (
        (path / "config.json").is_file() and (path / CHECKPOINT_NAME).is_file() and any((path / "voices").glob("*.pt"))
    )


def ensure_converted_weights(cache_dir: Path | None = None) -> Path:
    """Return the weights directory converted from the shipped int8 ONNX, converting once.

    ``cache_dir`` defaults to ``$KOKORO_RELAY_CACHE`` or ``~/.cache/kokoro-relay``; the result
    lives in ``<cache_dir>/torch-weights/<sha-prefix>/`` and is reused while present.
    """
    target = converted_weights_path(cache_dir)
    if is_weights_dir(target):
        return target
    result = convert_onnx_to_kmodel(assemble_int8_model(cache_dir))
    return write_weights_dir(result, default_voices_path(), target)


def default_torch_weights_dir(weights_dir: Path | None, cache_dir: Path | None = None) -> Path:
    """The weights directory the torch engine should load: ``weights_dir`` when given (official
    weights), else the converted cache (built on first use)."""
    return weights_dir if weights_dir is not None else ensure_converted_weights(cache_dir)
