"""Where the repository's deployables are, found from this file (the app runs from the source tree)."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
"""The repository root: infra/src/relay_infra/paths.py → four levels up."""
STATEMACHINES_DIR = REPO_ROOT / "statemachines"
KOKORO_GPU_DOCKERFILE = "containers/kokoro/Dockerfile.gpu"
AGENT_DOCKERFILE = "containers/agent/Dockerfile"
IMAGE_CONTEXT_EXCLUDES = (
    ".git",
    ".venv",
    "**/.venv",
    "**/node_modules",
    "**/cdk.out",
    "**/__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".hypothesis",
    ".cache",
    "out",
    "test-output",
    "tests",
    "bench",
    "docs",
    "web",
    "infra/*",
    "!infra/pyproject.toml",
    "statemachines",
)
"""Left out of the image build context (the repository root): both Dockerfiles copy only pyproject/uv.lock,
core/, containers/ and local/ (every workspace member's pyproject.toml stays in)."""
