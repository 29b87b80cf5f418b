"""Check: the endpoint's ``InferenceAmiVersion`` is a GPU AMI that SageMaker offers for its instance type.

Offline: the facts come from :mod:`relay_infra.inference_ami` (botocore's SageMaker model and the SageMaker
docs). Without an explicit AMI an ``ml.g4dn``/``ml.g5``/``ml.p4d`` endpoint runs driver 470 (CUDA 11.4), on which
the GPU image's torch finds no usable GPU.
"""

from __future__ import annotations

from relay_infra.inference_ami import (
    DEFAULT_AMI_CUDA,
    DEFAULT_AMI_DRIVER,
    INFERENCE_AMIS,
    UnknownInferenceAmiError,
    inference_ami,
    instance_family,
)
from relay_infra.preflight.result import CheckResult, Status

NAME = "inference-ami"
CONTEXT_KEY = "relay:ttsInferenceAmiVersion"


def check_inference_ami(ami_version: str | None, instance_type: str) -> CheckResult:
    """Pass when ``ami_version`` is a known GPU AMI whose documented instance families include
    ``instance_type``'s; the line gives the AMI's NVIDIA driver and CUDA version."""
    gpu_amis = sorted(version for version, ami in INFERENCE_AMIS.items() if ami.accelerator == "gpu")
    if not ami_version:
        return CheckResult(
            NAME,
            Status.FAIL,
            f"no InferenceAmiVersion set: {instance_type} would get the default AMI (driver {DEFAULT_AMI_DRIVER}, "
            f"CUDA {DEFAULT_AMI_CUDA}), too old for the GPU image",
            f"set -c {CONTEXT_KEY}=<one of {', '.join(gpu_amis)}>",
        )
    try:
        ami = inference_ami(ami_version)
        family = instance_family(instance_type)
    except (UnknownInferenceAmiError, ValueError) as error:
        return CheckResult(NAME, Status.FAIL, str(error), f"set -c {CONTEXT_KEY}=<one of {', '.join(gpu_amis)}>")
    if ami.accelerator != "gpu":
        return CheckResult(
            NAME,
            Status.FAIL,
            f"{ami_version} is a {ami.accelerator} AMI; the Kokoro image needs an NVIDIA GPU",
            f"set -c {CONTEXT_KEY}=<one of {', '.join(gpu_amis)}>",
        )
    facts = f"{ami_version} (NVIDIA driver {ami.nvidia_driver}, CUDA {ami.cuda})"
    if family not in ami.instance_families:
        offered = [version for version in gpu_amis if family in INFERENCE_AMIS[version].instance_families]
        fix = (
            f"set -c {CONTEXT_KEY}=<one of {', '.join(offered)}>, or an instance type of "
            f"{', '.join(ami.instance_families)}"
            if offered
            else f"choose a GPU instance type of {', '.join(ami.instance_families)} (-c relay:ttsInstanceType=...)"
        )
        return CheckResult(NAME, Status.FAIL, f"{facts} is not offered for {family}", fix)
    return CheckResult(NAME, Status.PASS, f"{facts} on {family}")
