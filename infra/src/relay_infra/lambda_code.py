"""The functions' code assets, built without Docker: one bundle for the gateway, one for the ops tasks.

:func:`functions_code` gives one ``lambda.Code`` per :class:`FunctionBundle`: :data:`GATEWAY_BUNDLE` (relay_core,
relay_functions and their locked dependencies: what the route handlers and the relay run) and :data:`OPS_BUNDLE`
(the same plus relay-functions' ``smoke`` extra: the TTS transports of ``relay_transport`` that the smoke test's
Kokoro check uses, with the SageMaker SDK, its CRT and smithy runtime; and uv.lock for the dependency audit). A route
handler never carries the smoke test's packages, and an edit to the transports never redeploys the gateway. Its
bundler runs on this machine (CDK's local bundling), in one of two modes (:class:`relay_infra.config.LambdaBundling`):

- ``full`` (``make synth`` / ``make deploy``): ``uv export --package relay-functions [--extra smoke] --frozen``
  lists the bundle's locked third-party dependencies, the whole closure as the lock resolves it; ``uv pip install
  --target`` installs them for Lambda's platform (manylinux2014 aarch64, CPython 3.12, wheels only); the workspace
  members' sources (relay_core, relay_functions, and relay_transport for ops) are copied beside them. The bundle is
  refused if torch or onnxruntime would be in it.
- ``sources``: only the source trees (fast, offline; for template tests; not deployable).

The asset hash covers the mode, uv.lock and every source file, so an unchanged tree reuses the staged asset.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_

from relay_infra.config import LambdaBundling
from relay_infra.paths import REPO_ROOT

FUNCTIONS_PACKAGE = "relay-functions"
SMOKE_EXTRA = "smoke"
"""relay-functions' optional dependencies for the ops smoke test: relay-transport (and through it the SageMaker SDK)."""
FUNCTION_SOURCES = (Path("core/src/relay_core"), Path("functions/src/relay_functions"))
TRANSPORT_SOURCES = (Path("transport/src/relay_transport"),)
"""The workspace member the ``smoke`` extra names, copied as sources like the others (docs/operations.md); it pulls
no Strands and no model runtime."""


@dataclass(frozen=True, slots=True)
class FunctionBundle:
    """One Lambda code asset: which source trees it copies and what it installs beside them."""

    name: str
    source_trees: tuple[Path, ...]
    extras: tuple[str, ...]
    """relay-functions' optional dependency groups the bundle installs with their whole locked closure."""
    lock_file: bool
    """Ship uv.lock at :data:`BUNDLED_LOCK_PATH` (the dependency audit's inventory)."""


GATEWAY_BUNDLE = FunctionBundle("gateway", FUNCTION_SOURCES, extras=(), lock_file=False)
OPS_BUNDLE = FunctionBundle("ops", (*FUNCTION_SOURCES, *TRANSPORT_SOURCES), extras=(SMOKE_EXTRA,), lock_file=True)
FORBIDDEN_DISTRIBUTIONS = frozenset({"torch", "onnxruntime", "onnxruntime-gpu", "kokoro"})
"""Never in a function package: the model runtimes belong to the containers only."""
BUNDLED_LOCK_PATH = "/var/task/uv.lock"
LAMBDA_PLATFORM = "aarch64-manylinux2014"
LAMBDA_PYTHON = "3.12"


class BundlingError(RuntimeError):
    """The functions' bundle could not be built; the message says which step failed and how to fix it."""


def _uv() -> list[str]:
    found = shutil.which("uv")
    return [found] if found else [sys.executable, "-m", "uv"]


def bundle_requirements(
    repo_root: Path = REPO_ROOT, package: str = FUNCTIONS_PACKAGE, extras: tuple[str, ...] = ()
) -> list[str]:
    """A package's locked third-party requirements (``name==version[; marker]``) with ``extras``, the whole closure
    as uv.lock resolves it, workspace members left out."""
    command = [
        *_uv(),
        "export",
        "--package",
        package,
        *(arg for extra in extras for arg in ("--extra", extra)),
        "--no-hashes",
        "--frozen",
        "--no-dev",
        "--no-emit-workspace",
        "--no-header",
        "--no-annotate",
    ]
    result = subprocess.run(command, cwd=repo_root, capture_output=True, text=True, check=False)  # noqa: S603
    if result.returncode != 0:
        raise BundlingError(f"`uv export` failed (is uv.lock up to date? run `make setup`): {result.stderr.strip()}")
    return [line.strip() for line in result.stdout.splitlines() if line.strip() and not line.startswith("#")]


def distribution_name(requirement: str) -> str:
    """``"Foo_Bar==1.0 ; marker"`` → ``"foo-bar"`` (PEP 503 normalized)."""
    name = requirement.split(";", 1)[0].split("==", 1)[0].strip()
    return name.lower().replace("_", "-").replace(".", "-")


def check_no_model_runtimes(requirements: list[str]) -> None:
    """Raise :class:`BundlingError` if a requirement is a model runtime (torch, onnxruntime, kokoro)."""
    bad = sorted({distribution_name(r) for r in requirements} & FORBIDDEN_DISTRIBUTIONS)
    if bad:
        raise BundlingError(
            f"the functions' bundle would contain {', '.join(bad)}: remove it from relay-functions' dependencies "
            "(model runtimes belong in the containers)"
        )


def copy_sources(output_dir: Path, bundle: FunctionBundle, repo_root: Path = REPO_ROOT) -> None:
    """Copy the bundle's source trees (package data included, caches left out) into ``output_dir``, and for the ops
    bundle the lock file (the dependency audit's inventory: ``/var/task/uv.lock``, :data:`BUNDLED_LOCK_PATH`)."""
    if bundle.lock_file:
        shutil.copy2(repo_root / "uv.lock", output_dir / "uv.lock")
    for tree in bundle.source_trees:
        shutil.copytree(
            repo_root / tree,
            output_dir / tree.name,
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
            dirs_exist_ok=True,
        )


def requirements_of(bundle: FunctionBundle, repo_root: Path = REPO_ROOT) -> list[str]:
    """The locked third-party requirements a bundle installs (refused if a model runtime is among them)."""
    requirements = bundle_requirements(repo_root, FUNCTIONS_PACKAGE, bundle.extras)
    check_no_model_runtimes(requirements)
    return requirements


def install_dependencies(
    output_dir: Path, bundle: FunctionBundle, repo_root: Path = REPO_ROOT, platform: str = LAMBDA_PLATFORM
) -> None:
    """Install the bundle's locked requirements into ``output_dir`` for Lambda's arm64 Python (wheels only), each
    without its own dependencies (the list is already the whole closure). ``platform`` other than Lambda's is for
    tests, which import the bundle on this machine to prove the closure complete."""
    requirements = requirements_of(bundle, repo_root)
    requirements_file = output_dir / ".requirements.txt"
    requirements_file.write_text("\n".join(requirements) + "\n", encoding="utf-8")
    command = [
        *_uv(),
        "pip",
        "install",
        "--no-config",
        "--target",
        str(output_dir),
        "--python-platform",
        platform,
        "--python-version",
        LAMBDA_PYTHON,
        "--only-binary",
        ":all:",
        "--no-deps",
        "--requirement",
        str(requirements_file),
    ]
    result = subprocess.run(command, cwd=repo_root, capture_output=True, text=True, check=False)  # noqa: S603
    requirements_file.unlink()
    if result.returncode != 0:
        raise BundlingError(
            "installing the functions' dependencies for Lambda (arm64, Python 3.12) failed; it needs PyPI. "
            f"For an offline synth pass -c relay:lambdaBundling=sources. uv said: {result.stderr.strip()[-2000:]}"
        )


def source_hash(mode: LambdaBundling, bundle: FunctionBundle, repo_root: Path = REPO_ROOT) -> str:
    """A fingerprint of everything the bundle is built from: the mode, the bundle, uv.lock and each source file."""
    digest = hashlib.sha256(f"{mode.value}|{bundle.name}|{LAMBDA_PLATFORM}|{LAMBDA_PYTHON}".encode())
    digest.update((repo_root / "uv.lock").read_bytes())
    for tree in bundle.source_trees:
        for path in sorted((repo_root / tree).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                digest.update(str(path.relative_to(repo_root)).encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()


@jsii.implements(ILocalBundling)
class LocalFunctionsBundler:
    """CDK's local bundling hook: builds the bundle in-process, so Docker is never needed."""

    def __init__(self, mode: LambdaBundling, bundle: FunctionBundle, repo_root: Path = REPO_ROOT) -> None:
        self._mode = mode
        self._bundle = bundle
        self._repo_root = repo_root

    def try_bundle(self, output_dir: str, *_options: Any, **_named: Any) -> bool:
        """Fill ``output_dir`` with the bundle; True tells CDK the asset is built (no Docker fallback)."""
        target = Path(output_dir)
        if self._mode is LambdaBundling.FULL:
            install_dependencies(target, self._bundle, self._repo_root)
        copy_sources(target, self._bundle, self._repo_root)
        return True


def functions_code(mode: LambdaBundling, bundle: FunctionBundle, repo_root: Path = REPO_ROOT) -> lambda_.Code:
    """The code asset of ``bundle`` (every handler of its stack), built by :class:`LocalFunctionsBundler`."""
    return lambda_.Code.from_asset(
        str(repo_root / "functions"),
        asset_hash_type=AssetHashType.CUSTOM,
        asset_hash=source_hash(mode, bundle, repo_root),
        bundling=BundlingOptions(
            # Never pulled: the local bundler always succeeds or raises. CDK requires an image to be named.
            image=DockerImage.from_registry("public.ecr.aws/sam/build-python3.12"),
            local=LocalFunctionsBundler(mode, bundle, repo_root),
        ),
    )
