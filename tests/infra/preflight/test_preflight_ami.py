"""The inference-AMI check (offline): a GPU AMI offered for the endpoint's instance family."""

from __future__ import annotations

from relay_infra.preflight.ami import check_inference_ami
from relay_infra.preflight.result import Status


def test_passes_for_a_gpu_ami_offered_on_the_instance_family() -> None:
    result = check_inference_ami("al2-ami-sagemaker-inference-gpu-3-1", "ml.g5.xlarge")
    assert result.status is Status.PASS
    assert result.found == "al2-ami-sagemaker-inference-gpu-3-1 (NVIDIA driver 550, CUDA 12.4) on ml.g5"


def test_fails_without_an_ami() -> None:
    result = check_inference_ami(None, "ml.g5.xlarge")
    assert result.status is Status.FAIL
    assert "driver 470" in result.found
    assert "relay:ttsInferenceAmiVersion=" in result.fix


def test_fails_for_an_unknown_ami() -> None:
    result = check_inference_ami("al2-ami-sagemaker-inference-gpu-9", "ml.g5.xlarge")
    assert result.status is Status.FAIL
    assert "unknown InferenceAmiVersion" in result.found


def test_fails_for_a_neuron_ami() -> None:
    result = check_inference_ami("al2-ami-sagemaker-inference-neuron-2", "ml.inf2.xlarge")
    assert result.status is Status.FAIL
    assert "neuron AMI" in result.found


def test_fails_for_a_family_the_ami_is_not_offered_on_and_names_one_that_is() -> None:
    result = check_inference_ami("al2-ami-sagemaker-inference-gpu-2", "ml.g6e.xlarge")
    assert result.status is Status.FAIL
    assert result.found.endswith("is not offered for ml.g6e")
    assert "al2-ami-sagemaker-inference-gpu-3-1" in result.fix


def test_fails_for_a_cpu_instance_type() -> None:
    result = check_inference_ami("al2-ami-sagemaker-inference-gpu-3-1", "ml.c5.xlarge")
    assert result.status is Status.FAIL
    assert "choose a GPU instance type" in result.fix
