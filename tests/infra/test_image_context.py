"""The images' build contexts hold only what each image installs (relay_infra.image_context): an edit elsewhere
(another member's code or pyproject.toml, a dependency only another member locks, docs) changes neither the staged
context nor the asset hash, so it never rebuilds, re-pushes or replaces the image (a new Kokoro image is a new
SageMaker model and an endpoint update that replaces the GPU fleet). The staged workspace is one uv takes as locked
and installs exactly what the whole lock installs."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_ecr_assets as ecr_assets

from relay_infra.constructs.tts_endpoint import image_from_dockerfile
from relay_infra.image_context import (
    ImageContextError,
    context_digest,
    main,
    stage_image_context,
    synced_package,
)
from relay_infra.paths import AGENT_DOCKERFILE, KOKORO_GPU_DOCKERFILE, REPO_ROOT

KOKORO_CPU_DOCKERFILE = "containers/kokoro/Dockerfile.cpu"
DOCKERFILES = (KOKORO_GPU_DOCKERFILE, KOKORO_CPU_DOCKERFILE, AGENT_DOCKERFILE)
IMAGES = {"kokoro": KOKORO_GPU_DOCKERFILE, "agent": AGENT_DOCKERFILE}
Instructions = list[tuple[str, str]]


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


@pytest.fixture(scope="module")
def staged(checkout: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each Dockerfile's context staged from the unedited checkout."""
    root = tmp_path_factory.mktemp("staged")
    return {name: stage_image_context(name, root / name.replace("/", "_"), checkout) for name in DOCKERFILES}


def uv() -> str:
    found = shutil.which("uv")
    if found is None:
        pytest.fail("uv is not on PATH; these checks run uv itself (it is what the images install with)")
    return found


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def add_dependency(pyproject: Path) -> None:
    """A new dependency in a member's pyproject.toml (what precedes a re-lock)."""
    text = pyproject.read_text(encoding="utf-8")
    edited = text.replace("dependencies = [\n", 'dependencies = [\n    "tzdata>=2024.1",\n', 1)
    assert edited != text
    pyproject.write_text(edited, encoding="utf-8")


def bump_locked(tree: Path, name: str) -> None:
    """The locked version of ``name`` changed in uv.lock (what a re-lock that moves only it writes)."""
    lock = tree / "uv.lock"
    pattern = re.compile(rf'(\[\[package\]\]\nname = "{re.escape(name)}"\nversion = "[^"]+)"')
    text, count = pattern.subn(r'\1.post9"', lock.read_text(encoding="utf-8"))
    assert count == 1
    lock.write_text(text, encoding="utf-8")


Edit = Callable[[Path], None]
EDITS: dict[str, Edit] = {
    "README.md": lambda tree: append(tree / "README.md", "\nedited\n"),
    "docs/deploy.md": lambda tree: append(tree / "docs/deploy.md", "\nedited\n"),
    "functions code": lambda tree: append(tree / "functions/src/relay_functions/gateway/default.py", "\n# edited\n"),
    "functions pyproject": lambda tree: add_dependency(tree / "functions/pyproject.toml"),
    "infra pyproject": lambda tree: add_dependency(tree / "infra/pyproject.toml"),
    "root pyproject": lambda tree: append(tree / "pyproject.toml", "\n# edited\n"),
    "local pyproject": lambda tree: add_dependency(tree / "local/pyproject.toml"),
    "agent code": lambda tree: append(tree / "containers/agent/src/voice_agent/turn.py", "\n# edited\n"),
    "agent pyproject": lambda tree: add_dependency(tree / "containers/agent/pyproject.toml"),
    "transport code": lambda tree: append(tree / "transport/src/relay_transport/__init__.py", "\n# edited\n"),
    "kokoro code": lambda tree: append(tree / "containers/kokoro/src/kokoro_server/app.py", "\n# edited\n"),
    "kokoro pyproject": lambda tree: add_dependency(tree / "containers/kokoro/pyproject.toml"),
    "kokoro cpu Dockerfile": lambda tree: append(tree / KOKORO_CPU_DOCKERFILE, "\n# edited\n"),
    "kokoro gpu Dockerfile": lambda tree: append(tree / KOKORO_GPU_DOCKERFILE, "\n# edited\n"),
    "core code": lambda tree: append(tree / "core/src/relay_core/limits.py", "\n# edited\n"),
    "lock: dev-only hypothesis": lambda tree: bump_locked(tree, "hypothesis"),
    "lock: infra's aws-cdk-lib": lambda tree: bump_locked(tree, "aws-cdk-lib"),
    "lock: agent's strands-agents": lambda tree: bump_locked(tree, "strands-agents"),
    "lock: kokoro's torch": lambda tree: bump_locked(tree, "torch"),
    "lock: kokoro's onnxruntime": lambda tree: bump_locked(tree, "onnxruntime"),
    "lock: kokoro's numpy": lambda tree: bump_locked(tree, "numpy"),
    "lock: shared boto3": lambda tree: bump_locked(tree, "boto3"),  # the agent's, the transports' and functions'
}
CHANGES = {
    "kokoro": {
        "kokoro code",
        "kokoro pyproject",
        "kokoro gpu Dockerfile",
        "core code",
        "lock: kokoro's torch",
        "lock: kokoro's onnxruntime",
        "lock: kokoro's numpy",
    },
    "agent": {
        "agent code",
        "agent pyproject",
        "transport code",
        "core code",
        "lock: agent's strands-agents",
        "lock: shared boto3",
    },
}
"""What changes each image's context; every other edit of :data:`EDITS` must leave it as it was."""


@pytest.mark.parametrize(("image", "edit"), [(image, edit) for image in IMAGES for edit in EDITS])
def test_only_an_edit_to_what_an_image_installs_changes_its_context(
    checkout: Path, staged: dict[str, Path], tmp_path: Path, image: str, edit: str
) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(checkout, tree)
    EDITS[edit](tree)
    after = stage_image_context(IMAGES[image], tmp_path / "context", tree)
    changed = context_digest(after) != context_digest(staged[IMAGES[image]])
    assert changed is (edit in CHANGES[image]), f"{edit} {'changed' if changed else 'left'} the {image} context"


def test_staging_is_deterministic(checkout: Path, staged: dict[str, Path], tmp_path: Path) -> None:
    """Same sources, same bytes: staging again later (new timestamps, another directory) writes the same files."""
    for path in (checkout / "core").rglob("*"):
        os.utime(path, (1_000_000_000, 1_000_000_000))
    again = stage_image_context(KOKORO_GPU_DOCKERFILE, tmp_path / "again", checkout)
    first = staged[KOKORO_GPU_DOCKERFILE]
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    assert all((first / f).read_bytes() == (again / f).read_bytes() for f in files)
    assert context_digest(again) == context_digest(first)


@pytest.mark.parametrize(
    ("dockerfile", "members"),
    [
        (KOKORO_GPU_DOCKERFILE, ["containers", "core"]),
        (AGENT_DOCKERFILE, ["containers", "core", "transport"]),
    ],
)
def test_the_context_holds_the_workspace_of_what_the_image_installs(
    staged: dict[str, Path], dockerfile: str, members: list[str]
) -> None:
    context = staged[dockerfile]
    top = sorted(p.name for p in context.iterdir())
    assert top == sorted([".python-version", "pyproject.toml", "uv.lock", *members])
    assert sorted(p.name for p in (context / "containers").iterdir()) == [Path(dockerfile).parent.name]
    assert [p.name for p in context.rglob("Dockerfile*")] == [Path(dockerfile).name]
    assert not list(context.rglob("__pycache__"))


@pytest.mark.parametrize("name", DOCKERFILES)
def test_uv_takes_the_staged_lock_and_installs_what_the_whole_lock_installs(
    staged: dict[str, Path], dockerfile: Callable[[Path], Instructions], name: str
) -> None:
    """``uv lock --check`` accepts the cut-down lock for the staged workspace (nothing to re-resolve), and ``uv
    export`` of the Dockerfile's package and extras, hashes included, is the same from it as from the repository."""
    context = staged[name]
    sync = next(args for op, args in dockerfile(context / name) if op == "RUN" and "uv sync" in args).split()
    package = sync[sync.index("--package") + 1]
    extras = [arg for i, arg in enumerate(sync) if i and sync[i - 1] == "--extra"]
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never", "UV_NO_SYNC": "1"}
    check = subprocess.run(
        [uv(), "lock", "--check", "--offline"], cwd=context, capture_output=True, text=True, env=env, check=False
    )
    assert check.returncode == 0, check.stderr
    export = [uv(), "export", "--frozen", "--no-dev", "--no-header", "--package", package]
    export += [arg for extra in extras for arg in ("--extra", extra)]
    outputs = [
        subprocess.run(export, cwd=cwd, capture_output=True, text=True, env=env, check=True).stdout
        for cwd in (context, REPO_ROOT)
    ]
    assert outputs[0] == outputs[1]
    assert outputs[0].count("--hash=sha256:") > 50


@pytest.mark.parametrize("name", DOCKERFILES)
def test_the_dockerfile_copies_exactly_the_staged_workspace(
    staged: dict[str, Path], dockerfile: Callable[[Path], Instructions], name: str
) -> None:
    """Every COPY source is in the context (else the build fails), and every member in it is copied (else ``uv
    sync`` finds a workspace member missing)."""
    context = staged[name]
    copied = {
        part
        for op, args in dockerfile(context / name)
        if op == "COPY" and "--from=" not in args
        for part in args.split()[:-1]
    }
    assert all((context / path).exists() for path in copied), copied
    members = json.loads(
        re.search(r"members = (\[.*\])", (context / "pyproject.toml").read_text(encoding="utf-8")).group(1)  # type: ignore[union-attr]
    )
    assert {"pyproject.toml", "uv.lock", ".python-version", *members} == copied


def test_the_dockerfile_names_the_package_staged() -> None:
    assert synced_package("RUN uv sync --frozen \\\n --package kokoro-server --extra torch\n") == "kokoro-server"
    with pytest.raises(ImageContextError, match="one workspace package"):
        synced_package("RUN pip install .\n")
    with pytest.raises(ImageContextError, match="one workspace package"):
        synced_package("RUN uv sync --package a\nRUN uv sync --package b\n")


def test_staging_refuses_a_used_directory_and_a_dockerfile_outside_the_repo(checkout: Path, tmp_path: Path) -> None:
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "keep.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(ImageContextError, match="not empty"):
        stage_image_context(AGENT_DOCKERFILE, tmp_path / "used", checkout)
    assert (tmp_path / "used" / "keep.txt").read_text(encoding="utf-8") == "mine"
    with pytest.raises(ImageContextError, match="inside the repository"):
        stage_image_context(str(checkout / AGENT_DOCKERFILE), tmp_path / "new", checkout)


def test_the_command_stages_a_context_and_says_how_to_build_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([AGENT_DOCKERFILE, str(tmp_path / "agent")]) == 0
    assert f"docker build -f {tmp_path / 'agent' / AGENT_DOCKERFILE} {tmp_path / 'agent'}" in capsys.readouterr().out
    assert main([AGENT_DOCKERFILE, str(tmp_path / "agent")]) == 1
    assert "not empty" in capsys.readouterr().err


def synth_image(tree: Path, image: str) -> tuple[str, Path, Path]:
    """Synthesize one image asset from ``tree``: (asset hash, the staged context, the asset's directory)."""
    app = App()
    stack = Stack(app, "Probe")
    platform = ecr_assets.Platform.LINUX_AMD64 if image == "kokoro" else ecr_assets.Platform.LINUX_ARM64
    identity = image_from_dockerfile(stack, "Image", IMAGES[image], platform, repo_root=tree).identity
    outdir = Path(app.synth().directory)
    manifest = json.loads((outdir / "Probe.assets.json").read_text(encoding="utf-8"))
    (entry,) = manifest["dockerImages"].values()
    assert entry["source"]["dockerFile"] == IMAGES[image]
    assert identity == next(iter(manifest["dockerImages"]))
    return identity, outdir / f"image-context.{IMAGES[image].replace('/', '_')}", outdir / entry["source"]["directory"]


def test_the_synthesized_image_asset_is_built_from_the_staged_context(checkout: Path, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(checkout, tree)
    before, context, directory = synth_image(tree, "kokoro")
    assert context_digest(directory) == context_digest(context)
    assert not (directory / "functions").exists() and not (directory / "transport").exists()
    EDITS["functions pyproject"](tree)
    EDITS["lock: agent's strands-agents"](tree)
    assert synth_image(tree, "kokoro")[0] == before
    EDITS["kokoro code"](tree)
    assert synth_image(tree, "kokoro")[0] != before
