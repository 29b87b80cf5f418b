"""Issue 18, defect 1: the GPU image's CUDA build must run on the endpoint's NVIDIA driver.

Reads the CUDA major the lock's torch needs and the driver of the InferenceAmiVersion the synthesized endpoint
config really sets, for every instance family that AMI (and so the config) allows. Before the fix the template set
no InferenceAmiVersion: ml.g5 then gets the default driver 470 (CUDA 11.4) and this test fails.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from relay_infra.config import ConfigError, RelayConfig
from relay_infra.gpu_runtime import CudaMismatchError, check_driver_runs_locked_cuda, locked_torch_cuda_major
from relay_infra.inference_ami import DEFAULT_AMI_CUDA, INFERENCE_AMIS, inference_ami, max_cuda_major

if TYPE_CHECKING:
    from tests.infra.conftest import SynthesizedApp

ROOT = Path(__file__).resolve().parents[2]


def test_the_lock_pins_a_cuda_build_of_torch() -> None:
    assert locked_torch_cuda_major() >= 12


def test_the_synthesized_endpoint_runs_the_locked_cuda_on_every_allowed_instance_family(
    relay_app: SynthesizedApp,
) -> None:
    (config,) = relay_app.resources("Speech", "AWS::SageMaker::EndpointConfig")
    (variant,) = config["Properties"]["ProductionVariants"]
    ami_version = variant.get("InferenceAmiVersion")
    needed = locked_torch_cuda_major()
    offered = max_cuda_major(ami_version) if ami_version else int(DEFAULT_AMI_CUDA.split(".")[0])
    assert offered >= needed, f"driver of {ami_version or 'the default AMI'} runs CUDA {offered}, torch needs {needed}"
    ami = inference_ami(ami_version)
    assert ami.accelerator == "gpu"
    for family in ami.instance_families:
        instance_type = f"{family}.xlarge" if family.startswith("ml.g") else f"{family}.48xlarge"
        allowed = RelayConfig(tts_instance_type=instance_type, tts_inference_ami_version=ami_version)
        check_driver_runs_locked_cuda(allowed.tts_inference_ami_version)


def test_an_ami_whose_driver_is_too_old_is_refused(tmp_path: Path) -> None:
    needed = locked_torch_cuda_major()
    too_old = [v for v, a in INFERENCE_AMIS.items() if a.accelerator == "gpu" and max_cuda_major(v) < needed]
    assert too_old, "the table has AMIs older than the lock's CUDA (the 12.x ones for a CUDA 13 torch)"
    for version in too_old:
        with pytest.raises(CudaMismatchError, match="relay:ttsInferenceAmiVersion"):
            check_driver_runs_locked_cuda(version)
    cu12 = tmp_path / "uv.lock"
    cu12.write_text(
        'version = 1\n[[package]]\nname = "torch"\nversion = "2.10.0"\n'
        'dependencies = [{ name = "nvidia-cudnn-cu12" }, { name = "nvidia-nccl-cu12" }]\n'
    )
    assert locked_torch_cuda_major(cu12) == 12
    check_driver_runs_locked_cuda("al2-ami-sagemaker-inference-gpu-3-1", cu12)


def test_an_instance_family_the_ami_is_not_offered_for_is_refused_at_synth() -> None:
    with pytest.raises(ConfigError, match="relay:ttsInstanceType"):
        RelayConfig(tts_instance_type="ml.inf2.xlarge")


def test_the_gpu_image_ships_no_second_cuda(dockerfile: object) -> None:
    ops = dockerfile(ROOT / "containers" / "kokoro" / "Dockerfile.gpu")  # type: ignore[operator]
    base = ops[0][1].lower()
    assert ops[0][0] == "FROM"
    assert "cuda" not in base
    assert "cudnn" not in base
    installs = " ".join(args for op, args in ops if op == "RUN").lower()
    assert "cuda" not in installs.replace("--extra torch", "")
