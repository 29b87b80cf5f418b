"""SageMaker inference AMIs (a production variant's ``InferenceAmiVersion``): driver, CUDA and instance families.

One table, :data:`INFERENCE_AMIS`, keyed by the exact ``InferenceAmiVersion`` value, so the stacks, the preflight
check and the tests that match the GPU image's CUDA build against the endpoint's driver read the same facts.

Sources (read December 2026):

* botocore's SageMaker service model, shape ``ProductionVariantInferenceAmiVersion`` (its enum is every value
  CreateEndpointConfig accepts) and the documentation of ``ProductionVariant.InferenceAmiVersion`` (accelerator,
  NVIDIA driver branch, CUDA version of each value). ``tests/infra/test_inference_ami.py`` checks this table
  against the installed botocore, so a botocore upgrade that adds or changes an AMI fails the suite.
* The SageMaker AI Developer Guide, "Best practices to minimize interruptions during GPU driver upgrades"
  (https://docs.aws.amazon.com/sagemaker/latest/dg/inference-gpu-drivers.html): the instance families each AMI
  runs on, and that without an override ``ml.g4dn``, ``ml.g5``, ``ml.p4d`` and ``ml.p4de`` get driver 470
  (CUDA 11.4). An earlier revision of the API documentation gave ``al2-ami-sagemaker-inference-gpu-2`` as
  driver 535.54.03 on ``ml.g4dn.*, ml.g5.*, ml.g6.*, ml.p3.*, ml.p4d.*, ml.p4de.*, ml.p5.*``.

Where AWS states only the driver branch (``550``), the table says only that; it never invents a patch level.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Accelerator = Literal["gpu", "neuron"]


class UnknownInferenceAmiError(ValueError):
    """An ``InferenceAmiVersion`` this table does not know; the message lists the known ones."""


@dataclass(frozen=True, slots=True)
class InferenceAmi:
    """What one ``InferenceAmiVersion`` value gives an endpoint instance."""

    version: str
    """The exact ``InferenceAmiVersion`` value (e.g. ``al2-ami-sagemaker-inference-gpu-3-1``)."""
    accelerator: Accelerator
    nvidia_driver: str
    """The NVIDIA driver as AWS documents it: a branch (``"550"``) or a full version (``"535.54.03"``);
    empty for a Neuron AMI."""
    cuda: str
    """The newest CUDA version the driver runs (``"12.4"``); empty for a Neuron AMI."""
    instance_families: tuple[str, ...]
    """SageMaker instance families (``ml.g5``) the AMI is offered for."""
    cuda_compat_mounting: bool = True
    """False where AWS ships the NVIDIA Container Toolkit with CUDA-compat mounting disabled (the ``-1`` AMIs):
    a container's own CUDA forward-compatibility libraries are then not mounted over the driver's."""


_AL2_535_FAMILIES = ("ml.g4dn", "ml.g5", "ml.g6", "ml.p3", "ml.p4d", "ml.p4de", "ml.p5")
_NEWER_FAMILIES = ("ml.g4dn", "ml.g5", "ml.g6", "ml.g6e", "ml.p4d", "ml.p4de", "ml.p5", "ml.p5e", "ml.p5en")

INFERENCE_AMIS: dict[str, InferenceAmi] = {
    ami.version: ami
    for ami in (
        InferenceAmi("al2-ami-sagemaker-inference-gpu-2", "gpu", "535.54.03", "12.2", _AL2_535_FAMILIES),
        InferenceAmi(
            "al2-ami-sagemaker-inference-gpu-2-1", "gpu", "535", "12.2", _AL2_535_FAMILIES, cuda_compat_mounting=False
        ),
        InferenceAmi(
            "al2-ami-sagemaker-inference-gpu-3-1", "gpu", "550", "12.4", _NEWER_FAMILIES, cuda_compat_mounting=False
        ),
        InferenceAmi(
            "al2023-ami-sagemaker-inference-gpu-4-1", "gpu", "580", "13.0", _NEWER_FAMILIES, cuda_compat_mounting=False
        ),
        InferenceAmi("al2-ami-sagemaker-inference-neuron-2", "neuron", "", "", ("ml.inf2", "ml.trn1")),
    )
}
"""Every ``InferenceAmiVersion`` value botocore's SageMaker model accepts, with its documented facts."""

DEFAULT_AMI_DRIVER = "470"
"""The driver ``ml.g4dn``/``ml.g5``/``ml.p4d``/``ml.p4de`` endpoints get when no ``InferenceAmiVersion`` is set."""
DEFAULT_AMI_CUDA = "11.4"


def inference_ami(ami_version: str) -> InferenceAmi:
    """The table's entry for ``ami_version``; raises :class:`UnknownInferenceAmiError` naming the known values."""
    try:
        return INFERENCE_AMIS[ami_version]
    except KeyError:
        raise UnknownInferenceAmiError(
            f"unknown InferenceAmiVersion {ami_version!r}; use one of {', '.join(sorted(INFERENCE_AMIS))} "
            "(botocore's ProductionVariantInferenceAmiVersion)"
        ) from None


def max_cuda_major(ami_version: str) -> int:
    """The newest CUDA major version the AMI's NVIDIA driver runs (``12`` for CUDA 12.4).

    Raises :class:`UnknownInferenceAmiError` for an unknown value and ``ValueError`` for a Neuron AMI (no CUDA).
    """
    ami = inference_ami(ami_version)
    if ami.accelerator != "gpu":
        raise ValueError(f"{ami_version} is a {ami.accelerator} AMI: it has no NVIDIA driver and runs no CUDA")
    return int(ami.cuda.split(".", 1)[0])


def instance_family(instance_type: str) -> str:
    """``ml.g5.xlarge`` → ``ml.g5``; ``ml.p4de.24xlarge`` → ``ml.p4de``."""
    parts = instance_type.split(".")
    if len(parts) != 3 or parts[0] != "ml" or not all(parts):
        raise ValueError(f"not a SageMaker instance type like ml.g5.xlarge: {instance_type!r}")
    return f"{parts[0]}.{parts[1]}"


def supports_instance_type(ami_version: str, instance_type: str) -> bool:
    """True when AWS documents ``ami_version`` for ``instance_type``'s family (exact family: ``ml.p4d`` does not
    cover ``ml.p4de`` unless listed). Raises :class:`UnknownInferenceAmiError` for an unknown AMI value."""
    return instance_family(instance_type) in inference_ami(ami_version).instance_families
