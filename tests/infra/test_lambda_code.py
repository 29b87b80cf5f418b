"""The functions' bundle: locked dependencies without model runtimes, sources copied, hash follows inputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from relay_infra.config import LambdaBundling
from relay_infra.lambda_code import (
    SMOKE_TEST_DISTRIBUTIONS,
    BundlingError,
    bundle_requirements,
    check_no_model_runtimes,
    copy_sources,
    distribution_name,
    smoke_test_requirements,
    source_hash,
)


def test_locked_requirements_hold_powertools_and_no_model_runtime() -> None:
    requirements = bundle_requirements()
    names = {distribution_name(line) for line in requirements}
    assert {"aws-lambda-powertools", "boto3", "pyjwt", "pydantic"} <= names
    assert not names & {"torch", "onnxruntime", "onnxruntime-gpu", "kokoro", "numpy"}
    assert "relay-core" not in names  # workspace members are copied as sources, not installed
    check_no_model_runtimes(requirements)


def test_smoke_test_transport_is_pinned_by_the_lock_without_model_runtimes() -> None:
    requirements = smoke_test_requirements()
    assert all("==" in line for line in requirements)
    assert {distribution_name(line) for line in requirements} == SMOKE_TEST_DISTRIBUTIONS
    check_no_model_runtimes(requirements)


def test_a_model_runtime_in_the_requirements_is_refused() -> None:
    with pytest.raises(BundlingError, match="torch"):
        check_no_model_runtimes(["boto3==1.40.0", "Torch==2.10.0 ; sys_platform == 'linux'"])


def test_sources_are_copied_without_caches(tmp_path: Path) -> None:
    copy_sources(tmp_path)
    assert (tmp_path / "relay_core" / "client_framing.py").is_file()
    assert (tmp_path / "relay_functions" / "gateway" / "relay.py").is_file()
    assert (tmp_path / "voice_agent" / "transport" / "sagemaker.py").is_file()  # the smoke test's transport
    assert (tmp_path / "uv.lock").is_file()  # the dependency audit's inventory
    assert not list(tmp_path.rglob("__pycache__"))


def test_asset_hash_changes_with_the_mode_and_the_sources(tmp_path: Path) -> None:
    for tree in ("core/src/relay_core", "functions/src/relay_functions", "containers/agent/src/voice_agent"):
        (tmp_path / tree).mkdir(parents=True)
        (tmp_path / tree / "__init__.py").write_text("")
    (tmp_path / "uv.lock").write_text("lock")
    full, sources = source_hash(LambdaBundling.FULL, tmp_path), source_hash(LambdaBundling.SOURCES, tmp_path)
    assert full != sources
    (tmp_path / "functions/src/relay_functions/handler.py").write_text("x = 1")
    assert source_hash(LambdaBundling.FULL, tmp_path) != full
