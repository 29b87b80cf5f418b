"""Where the repository's deployables are, found from this file (the app runs from the source tree)."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
"""The repository root: infra/src/relay_infra/paths.py → four levels up."""
STATEMACHINES_DIR = REPO_ROOT / "statemachines"
KOKORO_GPU_DOCKERFILE = "containers/kokoro/Dockerfile.gpu"
AGENT_DOCKERFILE = "containers/agent/Dockerfile"
WORKSPACE_MANIFESTS = (
    "pyproject.toml",
    "uv.lock",
    ".python-version",
    "core/pyproject.toml",
    "transport/pyproject.toml",
    "containers/kokoro/pyproject.toml",
    "containers/agent/pyproject.toml",
    "local/pyproject.toml",
    "cli/pyproject.toml",
    "functions/pyproject.toml",
    "infra/pyproject.toml",
)
"""What uv needs to read the one lock file inside an image build: the workspace root and every member's
pyproject.toml (``uv sync --frozen --package X`` refuses a workspace with a member missing)."""
KOKORO_IMAGE_SOURCES = ("core", "containers/kokoro")
"""The members the Kokoro images install (relay-core and kokoro-server), copied whole."""
AGENT_IMAGE_SOURCES = ("core", "transport", "containers/agent")
"""The members the agent image installs (relay-core, relay-transport and voice-agent), copied whole."""
_NEVER_IN_CONTEXT = ("**/__pycache__", "**/.venv", "**/node_modules", "**/*.pyc", "**/.mypy_cache", "**/.pytest_cache")


def image_context_excludes(sources: tuple[str, ...]) -> list[str]:
    """Docker-style ignore patterns (``IgnoreMode.DOCKER``) that leave in an image's build context only the
    workspace manifests and ``sources``: an edit anywhere else (README, docs, functions, the other image's code)
    changes neither the context nor the image's asset hash, so it never rebuilds or replaces that image."""
    return ["*", *(f"!{path}" for path in (*WORKSPACE_MANIFESTS, *sources)), *_NEVER_IN_CONTEXT]
