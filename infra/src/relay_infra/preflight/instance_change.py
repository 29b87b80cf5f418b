"""Check: a change of ``relay:ttsInstanceType`` can be deployed.

SageMaker ("Update endpoints that use auto scaling"): when an update would change the instance type of a variant
that is an Application Auto Scaling target, the update fails; the variant must be deregistered first, and may be
registered again after. CloudFormation deletes a resource the template dropped only after it has updated the
others, so one deploy cannot do both: the change takes two, each a plain ``make deploy``:

1. ``relay:ttsAutoscaling=false`` with the deployed instance type: CloudFormation deletes the scaling policy and
   the scalable target (the fleet keeps its instances);
2. the new ``relay:ttsInstanceType`` with autoscaling on again: the endpoint is updated first, then the scalable
   target, which depends on it, is registered again.

Read-only: sagemaker:DescribeEndpoint, sagemaker:DescribeEndpointConfig,
application-autoscaling:DescribeScalableTargets.
"""

from __future__ import annotations

from typing import Any

from relay_infra.preflight.aws_errors import AwsError, describe, error_code
from relay_infra.preflight.result import CheckResult, Status

NAME = "instance-type"
VARIANT_NAME = "AllTraffic"
"""The endpoint's one production variant (relay_infra.constructs.tts_endpoint.VARIANT_NAME)."""
SCALABLE_DIMENSION = "sagemaker:variant:DesiredInstanceCount"


def endpoint_name(name_prefix: str) -> str:
    """The endpoint's fixed name, ``<project>-<env>-tts`` (the stack names it so; a test compares the two)."""
    return f"{name_prefix}-tts"


def deployed_instance_type(sagemaker: Any, endpoint: str) -> str | None:
    """The instance type the deployed endpoint's variant runs; None when no such endpoint exists yet."""
    try:
        config_name = sagemaker.describe_endpoint(EndpointName=endpoint)["EndpointConfigName"]
    except AwsError as error:
        if error_code(error) == "ValidationException" and "Could not find endpoint" in describe(error):
            return None
        raise
    variants = sagemaker.describe_endpoint_config(EndpointConfigName=config_name)["ProductionVariants"]
    for variant in variants:
        if variant.get("VariantName") == VARIANT_NAME:
            return str(variant["InstanceType"])
    return None


def is_scaling_target(application_autoscaling: Any, endpoint: str) -> bool:
    """Whether the endpoint's variant is registered with Application Auto Scaling."""
    answer = application_autoscaling.describe_scalable_targets(
        ServiceNamespace="sagemaker",
        ResourceIds=[f"endpoint/{endpoint}/variant/{VARIANT_NAME}"],
        ScalableDimension=SCALABLE_DIMENSION,
    )
    return bool(answer.get("ScalableTargets"))


def check_instance_type_change(
    sagemaker: Any, application_autoscaling: Any, *, endpoint: str, instance_type: str, autoscaling: bool
) -> CheckResult:
    """Pass with no endpoint yet, the same instance type, or a variant that is not a scaling target; fail when the
    deploy would change the instance type of a scaling target (SageMaker refuses it), with the two deploys to
    make instead."""
    try:
        deployed = deployed_instance_type(sagemaker, endpoint)
        if deployed is None or deployed == instance_type:
            found = f"no endpoint '{endpoint}' yet" if deployed is None else f"'{endpoint}' runs {deployed}"
            return CheckResult(NAME, Status.PASS, found)
        targeted = is_scaling_target(application_autoscaling, endpoint)
    except AwsError as error:
        return CheckResult(
            NAME,
            Status.FAIL,
            f"cannot read endpoint '{endpoint}': {describe(error)}",
            "allow sagemaker:DescribeEndpoint, sagemaker:DescribeEndpointConfig and "
            "application-autoscaling:DescribeScalableTargets",
        )
    change = f"'{endpoint}' runs {deployed}; this deploy asks for {instance_type}"
    if not targeted:
        after = "" if autoscaling else " (autoscaling off: deploy again with relay:ttsAutoscaling=true after it)"
        return CheckResult(NAME, Status.PASS, f"{change}: the variant is not a scaling target, so it can change{after}")
    return CheckResult(
        NAME,
        Status.FAIL,
        f"{change}, and its variant is an autoscaling target: SageMaker refuses to change its instance type",
        f"deploy twice: make deploy CDK_CONTEXT='-c relay:ttsInstanceType={deployed} -c relay:ttsAutoscaling=false' "
        f"(removes the scaling target; the fleet keeps running), then make deploy "
        f"CDK_CONTEXT='-c relay:ttsInstanceType={instance_type}' (updates the endpoint, then registers autoscaling "
        "again); with an update that is all you change (docs/deploy.md, 'Change the instance type')",
    )
