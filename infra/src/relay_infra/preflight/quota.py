"""Check: the account's SageMaker quota ``<instance type> for endpoint usage`` covers the endpoint's instances.

A new account often has 0 for GPU instance types; CreateEndpoint then fails with ResourceLimitExceeded ("The
account-level service limit 'ml.g5.xlarge for endpoint usage' is 0 Instances"). The applied value comes from
service-quotas:ListServiceQuotas; where the account has none applied, ListAWSDefaultServiceQuotas gives the
default.

An update of the endpoint (a new image or setting) is blue/green (``relay_infra.constructs.tts_endpoint.
update_policy``): SageMaker launches a second fleet as large as the variant is then, before it retires the old one,
so an update at ``ttsMaxInstances`` needs twice that many. Below it, an update made while the fleet is scaled out
fails with ResourceLimitExceeded and CloudFormation rolls it back.
"""

from __future__ import annotations

from typing import Any

from relay_infra.preflight.aws_errors import AwsError, describe
from relay_infra.preflight.result import CheckResult, Status

NAME = "quota"
SERVICE_CODE = "sagemaker"


def quota_name(instance_type: str) -> str:
    """``ml.g5.xlarge for endpoint usage``: the quota's name in Service Quotas (service code ``sagemaker``)."""
    return f"{instance_type} for endpoint usage"


def find_quota(service_quotas: Any, name: str) -> tuple[dict[str, Any], bool] | None:
    """``(quota, is_default)`` for the quota called ``name``: the applied value if the account has one, else
    AWS's default; None when SageMaker has no such quota in this region."""
    for operation, is_default in (("list_service_quotas", False), ("list_aws_default_service_quotas", True)):
        for page in service_quotas.get_paginator(operation).paginate(ServiceCode=SERVICE_CODE):
            for quota in page.get("Quotas", []):
                if quota.get("QuotaName") == name:
                    return quota, is_default
    return None


def increase_fix(quota: dict[str, Any] | None, name: str, wanted: int, region: str | None) -> str:
    """How to ask for ``wanted`` instances: the console path and, when the quota code is known, the CLI call."""
    where = f"Service Quotas console -> Amazon SageMaker -> '{name}' -> request {wanted}"
    if quota and quota.get("QuotaCode"):
        region_flag = f" --region {region}" if region else ""
        where += (
            f", or aws service-quotas request-service-quota-increase --service-code {SERVICE_CODE} "
            f"--quota-code {quota['QuotaCode']} --desired-value {wanted}{region_flag}"
        )
    return where


def check_endpoint_quota(
    service_quotas: Any, *, instance_type: str, min_instances: int, max_instances: int, region: str | None
) -> CheckResult:
    """Fail below ``min_instances`` (the endpoint cannot be created); warn below ``max_instances`` (autoscaling
    stops short of its maximum) and below ``2 x max_instances`` (a blue/green update at full scale cannot launch
    its second fleet); pass otherwise."""
    name = quota_name(instance_type)
    update_instances = 2 * max_instances
    try:
        found = find_quota(service_quotas, name)
    except AwsError as error:
        return CheckResult(
            NAME,
            Status.FAIL,
            f"cannot read '{name}': {describe(error)}",
            "allow servicequotas:ListServiceQuotas and servicequotas:ListAWSDefaultServiceQuotas, or check the "
            f"quota in the Service Quotas console (needs >= {min_instances}, {update_instances} for updates)",
        )
    if found is None:
        return CheckResult(
            NAME,
            Status.FAIL,
            f"SageMaker has no quota '{name}' in {region or 'this region'}: the instance type is not offered here",
            "choose an instance type SageMaker hosts in this region (-c relay:ttsInstanceType=...) or another region",
        )
    quota, is_default = found
    value = int(quota.get("Value", 0))
    source = "AWS default" if is_default else "applied"
    text = (
        f"'{name}' = {value} ({source}, {quota.get('QuotaCode', '?')}); endpoint needs {min_instances}..{max_instances}"
        f", {update_instances} while an update at {max_instances} runs (blue/green)"
    )
    if value < min_instances:
        return CheckResult(NAME, Status.FAIL, text, increase_fix(quota, name, update_instances, region))
    if value < max_instances:
        return CheckResult(
            NAME,
            Status.WARN,
            f"{text}: autoscaling stops at {value}",
            increase_fix(quota, name, update_instances, region) + f" (or -c relay:ttsMaxInstances={value // 2 or 1})",
        )
    if value < update_instances:
        return CheckResult(
            NAME,
            Status.WARN,
            f"{text}: an update fails while more than {value // 2} instances run",
            increase_fix(quota, name, update_instances, region)
            + f" (or -c relay:ttsMaxInstances={value // 2 or 1}, or deploy updates when the fleet is small)",
        )
    return CheckResult(NAME, Status.PASS, text)
