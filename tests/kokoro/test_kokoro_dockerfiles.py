"""The TTS container images: SageMaker label, port, entry point, and the pinned torch (PYSEC-2026-2286)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
KOKORO = ROOT / "containers" / "kokoro"
BIDI_LABEL = "com.amazonaws.sagemaker.capabilities.bidirectional-streaming=true"
MIN_TORCH = (2, 10, 0)


def version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


def uv_export(*args: str) -> str:
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    result = subprocess.run(
        ["uv", "export", "--frozen", "--no-dev", "--no-hashes", "--package", "kokoro-server", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return result.stdout


@pytest.mark.parametrize("name", ["Dockerfile.gpu", "Dockerfile.cpu"])
def test_images_are_sagemaker_bidi_containers_serving_on_8080(name: str, dockerfile: Any) -> None:
    ops = dockerfile(KOKORO / name)
    labels = [args for op, args in ops if op == "LABEL"]
    assert BIDI_LABEL in labels
    assert ("EXPOSE", "8080") in ops
    entry = [args for op, args in ops if op == "ENTRYPOINT"]
    cmd = [args for op, args in ops if op == "CMD"]
    assert entry == ['["kokoro-server"]']
    assert cmd == ['["serve"]']
    sync = " ".join(args for op, args in ops if op == "RUN" and "uv sync" in args)
    assert "--frozen" in shlex.split(sync)
    assert "--no-dev" in shlex.split(sync)


def test_gpu_image_installs_torch_from_the_lock_and_reads_weights_from_opt_ml_model(dockerfile: Any) -> None:
    ops = dockerfile(KOKORO / "Dockerfile.gpu")
    assert ops[0][0] == "FROM"
    assert "python:3.12" in ops[0][1]  # CUDA comes from the torch wheel only (tests/infra/test_gpu_runtime.py)
    sync = next(args for op, args in ops if op == "RUN" and "uv sync" in args)
    assert "--extra torch" in sync
    env = " ".join(args for op, args in ops if op == "ENV")
    assert "KOKORO_ENGINE=torch" in env
    assert "KOKORO_WEIGHTS_DIR=/opt/ml/model" in env


def test_locked_torch_is_patched_and_only_in_the_gpu_image() -> None:
    lock = (ROOT / "uv.lock").read_text()
    match = re.search(r'\[\[package\]\]\nname = "torch"\nversion = "([^"]+)"', lock)
    assert match, "torch must be in uv.lock"
    assert version_tuple(match.group(1)) >= MIN_TORCH
    declared = (KOKORO / "pyproject.toml").read_text()
    assert re.search(r'"torch>=2\.1\d', declared), "the torch extra must require >= 2.10.0"
    gpu = uv_export("--extra", "torch")
    torch_line = next(line for line in gpu.splitlines() if line.startswith("torch=="))
    assert version_tuple(torch_line.split("==")[1]) >= MIN_TORCH
    cpu = uv_export()
    names = {line.split("==")[0] for line in cpu.splitlines() if "==" in line}
    assert "onnxruntime" in names
    assert not names & {"torch", "kokoro", "transformers", "spacy"}
    # the Japanese G2P (misaki without its English extra, OpenJTalk with its dictionary) is in both images
    assert {"misaki", "pyopenjtalk-plus"} <= names
