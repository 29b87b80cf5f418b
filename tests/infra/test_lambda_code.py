"""The functions' bundle: locked dependencies without model runtimes, sources copied, hash follows inputs."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

from relay_functions import manifest
from relay_functions.ops import placeholders
from relay_infra.config import LambdaBundling
from relay_infra.lambda_code import (
    GATEWAY_BUNDLE,
    OPS_BUNDLE,
    BundlingError,
    FunctionBundle,
    bundle_requirements,
    check_no_model_runtimes,
    copy_sources,
    distribution_name,
    install_dependencies,
    requirements_of,
    source_hash,
)

SDK = {"aws-sdk-sagemaker-runtime-http2", "awscrt", "smithy-core", "smithy-http", "smithy-aws-core"}
"""The SageMaker bidirectional SDK and its runtime: the smoke test needs them, a route handler never does."""


def test_locked_requirements_hold_powertools_and_no_model_runtime() -> None:
    requirements = bundle_requirements()
    names = {distribution_name(line) for line in requirements}
    assert {"aws-lambda-powertools", "boto3", "pyjwt", "pydantic"} <= names
    assert not names & {"torch", "onnxruntime", "onnxruntime-gpu", "kokoro", "numpy"}
    assert "relay-core" not in names  # workspace members are copied as sources, not installed
    check_no_model_runtimes(requirements)


def test_the_ops_bundle_installs_the_transports_whole_locked_closure() -> None:
    requirements = requirements_of(OPS_BUNDLE)
    assert all("==" in line for line in requirements)
    names = {distribution_name(line) for line in requirements}
    transport_closure = {distribution_name(line) for line in bundle_requirements(package="relay-transport")}
    assert transport_closure <= names
    # Dependencies of the SDK's dependencies (smithy-aws-core → aws-sdk-signers, smithy-json → ijson): a hand-made
    # list of the SDK's packages once left them out, and `pip install --no-deps` would not have noticed.
    assert SDK | {"aws-sdk-signers", "ijson"} <= names
    check_no_model_runtimes(requirements)


def test_a_model_runtime_in_the_requirements_is_refused() -> None:
    with pytest.raises(BundlingError, match="torch"):
        check_no_model_runtimes(["boto3==1.40.0", "Torch==2.10.0 ; sys_platform == 'linux'"])


def test_the_ops_bundle_has_the_smoke_transport_and_the_lock(tmp_path: Path) -> None:
    copy_sources(tmp_path, OPS_BUNDLE)
    assert (tmp_path / "relay_core" / "client" / "framing.py").is_file()
    assert (tmp_path / "relay_functions" / "ops" / "smoke_kokoro.py").is_file()
    assert (tmp_path / "relay_transport" / "sagemaker.py").is_file()  # the smoke test's transport
    assert not (tmp_path / "voice_agent").exists()  # the agent itself is not needed
    assert (tmp_path / "uv.lock").is_file()  # the dependency audit's inventory
    assert not list(tmp_path.rglob("__pycache__"))


def test_the_gateway_bundle_carries_no_smoke_test_packages(tmp_path: Path) -> None:
    copy_sources(tmp_path, GATEWAY_BUNDLE)
    assert (tmp_path / "relay_functions" / "gateway" / "relay.py").is_file()
    assert not (tmp_path / "relay_transport").exists()
    assert not (tmp_path / "uv.lock").exists()
    names = {distribution_name(r) for r in requirements_of(GATEWAY_BUNDLE)}
    assert "aws-lambda-powertools" in names
    assert not names & SDK


def test_asset_hash_changes_with_the_mode_the_bundle_and_its_sources(tmp_path: Path) -> None:
    for tree in ("core/src/relay_core", "functions/src/relay_functions", "transport/src/relay_transport"):
        (tmp_path / tree).mkdir(parents=True)
        (tmp_path / tree / "__init__.py").write_text("")
    (tmp_path / "uv.lock").write_text("lock")
    full = source_hash(LambdaBundling.FULL, GATEWAY_BUNDLE, tmp_path)
    assert full != source_hash(LambdaBundling.SOURCES, GATEWAY_BUNDLE, tmp_path)
    ops = source_hash(LambdaBundling.FULL, OPS_BUNDLE, tmp_path)
    assert full != ops
    (tmp_path / "transport/src/relay_transport/ws.py").write_text("x = 1")
    assert source_hash(LambdaBundling.FULL, GATEWAY_BUNDLE, tmp_path) == full  # the transports are not in the gateway
    assert source_hash(LambdaBundling.FULL, OPS_BUNDLE, tmp_path) != ops
    (tmp_path / "functions/src/relay_functions/handler.py").write_text("x = 1")
    assert source_hash(LambdaBundling.FULL, GATEWAY_BUNDLE, tmp_path) != full


OPS_HANDLERS = [handler.rpartition(".")[0] for handler in placeholders.FUNCTION_HANDLERS.values()]
BUNDLE_HANDLERS = {
    "gateway": ["relay_functions.gateway." + f.name for f in manifest.FUNCTIONS],
    "ops": [*OPS_HANDLERS, "relay_transport.sagemaker"],
}
"""Every handler of each bundle (and, for ops, the smoke test's SageMaker transport, which its handler imports only
when it runs)."""


@pytest.mark.slow
@pytest.mark.parametrize("bundle", [GATEWAY_BUNDLE, OPS_BUNDLE], ids=lambda b: b.name)
def test_every_handler_and_package_imports_from_the_bundle_alone(tmp_path: Path, bundle: FunctionBundle) -> None:
    """The bundle built as for Lambda (locked wheels, ``--no-deps``, the sources), but for this machine's platform,
    imported by an interpreter that sees nothing else (no site-packages): every handler, and every top-level package
    in it one by one. A dependency missing from the closure (as aws-sdk-signers, ijson and aiohttp once were from
    the ops bundle) fails here instead of in the first invocation after a deploy."""
    install_dependencies(tmp_path, bundle, platform=f"{platform.machine()}-manylinux2014")
    copy_sources(tmp_path, bundle)
    packages = sorted(p.name for p in tmp_path.iterdir() if (p / "__init__.py").is_file())
    assert {"relay_core", "relay_functions", "boto3"} <= set(packages)
    env = {"AWS_DEFAULT_REGION": "us-east-1", "POWERTOOLS_TRACE_DISABLED": "1", "PATH": "/usr/bin:/bin"}
    failures = {}
    for module in [*BUNDLE_HANDLERS[bundle.name], *packages]:
        code = f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import {module}"
        result = subprocess.run(
            [sys.executable, "-S", "-I", "-c", code], check=False, capture_output=True, text=True, env=env
        )
        if result.returncode != 0:
            failures[module] = result.stderr.strip().splitlines()[-1]
    assert failures == {}
