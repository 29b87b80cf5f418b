"""Where the repository's deployables are, found from this file (the app runs from the source tree)."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
"""The repository root: infra/src/relay_infra/paths.py → four levels up."""
STATEMACHINES_DIR = REPO_ROOT / "statemachines"
KOKORO_GPU_DOCKERFILE = "containers/kokoro/Dockerfile.gpu"
AGENT_DOCKERFILE = "containers/agent/Dockerfile"
"""The images' Dockerfiles, built from a context of only what each installs (:mod:`relay_infra.image_context`)."""
