"""The images' build contexts hold only what each image installs: an edit elsewhere (README, docs, functions, the
other image's code) changes neither the context nor the asset hash, so it never rebuilds, re-pushes or replaces the
endpoint's model (a new Kokoro image is a new SageMaker model and an endpoint update)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_ecr_assets as ecr_assets

from relay_infra.constructs.tts_endpoint import image_from_dockerfile
from relay_infra.paths import (
    AGENT_DOCKERFILE,
    AGENT_IMAGE_SOURCES,
    KOKORO_GPU_DOCKERFILE,
    KOKORO_IMAGE_SOURCES,
    REPO_ROOT,
    WORKSPACE_MANIFESTS,
)

Images = dict[str, tuple[str, tuple[str, ...], ecr_assets.Platform]]
IMAGES: Images = {
    "kokoro": (KOKORO_GPU_DOCKERFILE, KOKORO_IMAGE_SOURCES, ecr_assets.Platform.LINUX_AMD64),
    "agent": (AGENT_DOCKERFILE, AGENT_IMAGE_SOURCES, ecr_assets.Platform.LINUX_ARM64),
}


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the repository's tracked files (what a fresh clone has)."""
    root = tmp_path_factory.mktemp("checkout")
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    for name in tracked.stdout.splitlines():
        source = REPO_ROOT / name
        if source.is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    return root


def asset_hash(context: Path, image: str) -> str:
    dockerfile, sources, platform = IMAGES[image]
    stack = Stack(App(), "Probe")
    return image_from_dockerfile(stack, "Image", dockerfile, platform, sources=sources, context=context).identity


def _append(path: Path) -> None:
    path.write_text(path.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")


@pytest.mark.parametrize(
    ("image", "edited", "changes"),
    [
        ("kokoro", "README.md", False),
        ("kokoro", "docs/deploy.md", False),
        ("kokoro", "functions/src/relay_functions/gateway/default.py", False),
        ("kokoro", "containers/agent/src/voice_agent/turn.py", False),
        ("kokoro", "cli/src/relay_cli/cli.py", False),
        ("kokoro", "local/src/relay_local/stack.py", False),
        ("kokoro", "infra/src/relay_infra/app.py", False),
        ("kokoro", "containers/kokoro/src/kokoro_server/app.py", True),
        ("kokoro", "core/src/relay_core/limits.py", True),
        ("kokoro", "uv.lock", True),
        ("agent", "containers/kokoro/src/kokoro_server/app.py", False),
        ("agent", "functions/src/relay_functions/gateway/default.py", False),
        ("agent", "containers/agent/src/voice_agent/turn.py", True),
    ],
)
def test_only_an_edit_to_what_an_image_installs_changes_its_hash(
    checkout: Path, tmp_path: Path, image: str, edited: str, changes: bool
) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(checkout, tree)
    before = asset_hash(tree, image)
    _append(tree / edited)
    assert (asset_hash(tree, image) != before) is changes


def test_the_context_holds_every_file_the_dockerfile_copies(checkout: Path) -> None:
    """Every COPY source of each Dockerfile is inside its narrowed context (else the build fails at deploy)."""
    for dockerfile, sources, _ in IMAGES.values():
        lines = (checkout / dockerfile).read_text(encoding="utf-8").splitlines()
        copied = [
            part for line in lines if line.startswith("COPY ") and "--from=" not in line for part in line.split()[1:-1]
        ]
        assert copied
        allowed = (*WORKSPACE_MANIFESTS, *sources)
        outside = [path for path in copied if not any(path == a or path.startswith(f"{a}/") for a in allowed)]
        assert outside == [], f"{dockerfile} copies {outside}, which its build context leaves out"
