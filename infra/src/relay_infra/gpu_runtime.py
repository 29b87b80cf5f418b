"""Does the GPU image's CUDA build run on the endpoint's NVIDIA driver? Read from the lock file, not assumed.

The Kokoro GPU image gets CUDA from the torch wheel the lock pins (its ``cuda-toolkit`` and ``nvidia-*-cuNN``
dependencies); the driver is the endpoint instance's, chosen by the production variant's ``InferenceAmiVersion``
(:mod:`relay_infra.inference_ami`). A driver runs every CUDA release of its own major version and older (CUDA minor
version compatibility), never a newer major: torch then sees no usable GPU, the server exits, ``/ping`` never answers
and CreateEndpoint fails after the health-check timeout.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from relay_infra.inference_ami import inference_ami, max_cuda_major
from relay_infra.paths import REPO_ROOT

LOCK_FILE = REPO_ROOT / "uv.lock"
_CU_SUFFIX = re.compile(r"^nvidia-[a-z0-9-]+-cu(\d+)$")


class CudaMismatchError(ValueError):
    """The locked torch needs a newer CUDA major than the endpoint's driver runs; the message says what to change."""


def _packages(lock_path: Path) -> dict[str, dict[str, Any]]:
    lock = tomllib.loads(lock_path.read_text(encoding="utf-8"))
    return {package["name"]: package for package in lock.get("package", [])}


def locked_torch_cuda_major(lock_path: Path = LOCK_FILE) -> int:
    """The CUDA major version the locked torch wheel is built for (Linux): the ``cuda-toolkit`` it depends on, or
    else the ``-cuNN`` suffix of its ``nvidia-*`` dependencies. Raises ``LookupError`` when the lock has no CUDA
    torch (a CPU-only build needs no driver at all, which this project's GPU image never is)."""
    packages = _packages(lock_path)
    torch = packages.get("torch")
    if torch is None:
        raise LookupError(f"{lock_path} locks no torch")
    names = [str(dependency["name"]) for dependency in torch.get("dependencies", [])]
    if "cuda-toolkit" in names and "cuda-toolkit" in packages:
        return int(str(packages["cuda-toolkit"]["version"]).split(".", 1)[0])
    majors = {int(match.group(1)) for name in names if (match := _CU_SUFFIX.match(name))}
    if not majors:
        raise LookupError(f"the torch {torch.get('version')} in {lock_path} depends on no CUDA packages")
    return max(majors)


def check_driver_runs_locked_cuda(ami_version: str, lock_path: Path = LOCK_FILE) -> None:
    """Raise :class:`CudaMismatchError` when ``ami_version``'s driver cannot run the locked torch's CUDA."""
    needed = locked_torch_cuda_major(lock_path)
    offered = max_cuda_major(ami_version)
    if offered < needed:
        ami = inference_ami(ami_version)
        raise CudaMismatchError(
            f"the locked torch is built for CUDA {needed}.x but InferenceAmiVersion {ami_version} has NVIDIA driver "
            f"{ami.nvidia_driver} (CUDA {ami.cuda}): choose an AMI whose CUDA major is >= {needed} "
            f"(relay:ttsInferenceAmiVersion), or lock a torch built for CUDA {offered}.x"
        )
