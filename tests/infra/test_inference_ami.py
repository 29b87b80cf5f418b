"""The inference-AMI table against botocore's SageMaker model: every value, its driver branch and CUDA version."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import botocore.session
import pytest

from relay_infra.inference_ami import (
    INFERENCE_AMIS,
    UnknownInferenceAmiError,
    instance_family,
    max_cuda_major,
    supports_instance_type,
)


def _sagemaker_model() -> dict[str, Any]:
    loader = botocore.session.get_session().get_component("data_loader")
    model: dict[str, Any] = loader.load_service_model("sagemaker", "service-2")
    return model


def _documented() -> dict[str, dict[str, str]]:
    """``{ami: {"driver": "550", "cuda": "12.4", "accelerator": "GPU"}}`` from ProductionVariant's docs."""
    text = unescape(
        _sagemaker_model()["shapes"]["ProductionVariant"]["members"]["InferenceAmiVersion"]["documentation"]
    )
    facts: dict[str, dict[str, str]] = {}
    for name, body in re.findall(r"<dt>([^<]+)</dt>\s*<dd>(.*?)</dd>", text, flags=re.S):
        items: dict[str, str] = dict(re.findall(r"<p>([^:<]+):\s*([^<]+)</p>", body))
        facts[name.strip()] = {
            "accelerator": items.get("Accelerator", "").strip(),
            "driver": items.get("NVIDIA driver version", "").strip(),
            "cuda": items.get("CUDA version", items.get("CUDA driver version", "")).strip(),
        }
    return facts


def test_the_table_has_exactly_botocores_values() -> None:
    enum = _sagemaker_model()["shapes"]["ProductionVariantInferenceAmiVersion"]["enum"]
    assert sorted(INFERENCE_AMIS) == sorted(enum)


def test_driver_branch_cuda_and_accelerator_match_botocores_documentation() -> None:
    documented = _documented()
    assert sorted(documented) == sorted(INFERENCE_AMIS)
    for version, ami in INFERENCE_AMIS.items():
        facts = documented[version]
        assert ami.version == version
        assert ami.nvidia_driver.split(".")[0] == facts["driver"].split(".")[0], version
        assert ami.cuda == facts["cuda"], version
        assert ami.accelerator == ("gpu" if facts["accelerator"] == "GPU" else "neuron"), version


@pytest.mark.parametrize(
    ("version", "major"),
    [
        ("al2-ami-sagemaker-inference-gpu-2", 12),
        ("al2-ami-sagemaker-inference-gpu-3-1", 12),
        ("al2023-ami-sagemaker-inference-gpu-4-1", 13),
    ],
)
def test_max_cuda_major(version: str, major: int) -> None:
    assert max_cuda_major(version) == major


def test_max_cuda_major_refuses_neuron_and_unknown_amis() -> None:
    with pytest.raises(ValueError, match="no NVIDIA driver"):
        max_cuda_major("al2-ami-sagemaker-inference-neuron-2")
    with pytest.raises(UnknownInferenceAmiError, match="al2-ami-sagemaker-inference-gpu-3-1"):
        max_cuda_major("al2-ami-sagemaker-inference-gpu-9")


@pytest.mark.parametrize(
    ("version", "instance_type", "supported"),
    [
        ("al2-ami-sagemaker-inference-gpu-3-1", "ml.g5.xlarge", True),
        ("al2-ami-sagemaker-inference-gpu-3-1", "ml.g6e.2xlarge", True),
        ("al2-ami-sagemaker-inference-gpu-3-1", "ml.g4dn.xlarge", True),
        ("al2023-ami-sagemaker-inference-gpu-4-1", "ml.p5.48xlarge", True),
        ("al2-ami-sagemaker-inference-gpu-2", "ml.p3.2xlarge", True),
        ("al2-ami-sagemaker-inference-gpu-2", "ml.g6e.xlarge", False),
        ("al2-ami-sagemaker-inference-gpu-3-1", "ml.c5.xlarge", False),
        ("al2-ami-sagemaker-inference-gpu-3-1", "ml.inf2.xlarge", False),
        ("al2-ami-sagemaker-inference-neuron-2", "ml.inf2.xlarge", True),
        ("al2-ami-sagemaker-inference-neuron-2", "ml.g5.xlarge", False),
    ],
)
def test_supports_instance_type(version: str, instance_type: str, supported: bool) -> None:
    assert supports_instance_type(version, instance_type) is supported


def test_every_gpu_ami_runs_on_the_default_instance_family() -> None:
    gpu = [version for version, ami in INFERENCE_AMIS.items() if ami.accelerator == "gpu"]
    assert gpu
    assert all(supports_instance_type(version, "ml.g5.xlarge") for version in gpu)


@pytest.mark.parametrize("instance_type", ["g5.xlarge", "ml.g5", "ml..xlarge", ""])
def test_instance_family_refuses_malformed_types(instance_type: str) -> None:
    with pytest.raises(ValueError, match=r"ml\.g5\.xlarge"):
        instance_family(instance_type)
