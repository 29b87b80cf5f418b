"""The endpoint-instance quota check: applied value, else AWS's default; fail below min, warn below max and below
twice max (a blue/green update launches a second fleet as large as the first)."""

from __future__ import annotations

from typing import Any

from tests.infra.preflight.stubs import REGION, Stubbed

from relay_infra.preflight.quota import check_endpoint_quota, quota_name
from relay_infra.preflight.result import Status

NAME = "ml.g5.xlarge for endpoint usage"


def _quota(name: str, value: float, code: str = "L-1928E07B") -> dict[str, Any]:
    return {"ServiceCode": "sagemaker", "QuotaCode": code, "QuotaName": name, "Value": value, "Unit": "None"}


def _check(client: Any) -> Any:
    return check_endpoint_quota(client, instance_type="ml.g5.xlarge", min_instances=1, max_instances=4, region=REGION)


def test_quota_name_follows_sagemakers_naming() -> None:
    assert quota_name("ml.g5.xlarge") == NAME


NEEDS = "endpoint needs 1..4, 8 while an update at 4 runs (blue/green)"


def test_passes_when_the_applied_quota_covers_an_update_at_the_maximum(stubbed: Stubbed) -> None:
    client, stub = stubbed("service-quotas")
    stub.add_response(
        "list_service_quotas",
        {"Quotas": [_quota("ml.g5.2xlarge for endpoint usage", 0, "L-X"), _quota(NAME, 8)]},
        {"ServiceCode": "sagemaker"},
    )
    result = _check(client)
    assert result.status is Status.PASS
    assert result.found == f"'{NAME}' = 8 (applied, L-1928E07B); {NEEDS}"


def test_warns_when_the_quota_covers_the_maximum_but_not_an_update_at_it(stubbed: Stubbed) -> None:
    """The endpoint's update is blue/green: a second fleet as large as the first runs until the old one drains."""
    client, stub = stubbed("service-quotas")
    stub.add_response("list_service_quotas", {"Quotas": [_quota(NAME, 4)]}, {"ServiceCode": "sagemaker"})
    result = _check(client)
    assert result.status is Status.WARN
    assert result.found.endswith("an update fails while more than 2 instances run")
    assert "--desired-value 8" in result.fix
    assert "relay:ttsMaxInstances=2" in result.fix


def test_pages_through_the_applied_quotas(stubbed: Stubbed) -> None:
    client, stub = stubbed("service-quotas")
    stub.add_response("list_service_quotas", {"Quotas": [], "NextToken": "t"}, {"ServiceCode": "sagemaker"})
    stub.add_response(
        "list_service_quotas", {"Quotas": [_quota(NAME, 8)]}, {"ServiceCode": "sagemaker", "NextToken": "t"}
    )
    assert _check(client).status is Status.PASS


def test_fails_on_a_zero_default_with_the_request_to_make(stubbed: Stubbed) -> None:
    client, stub = stubbed("service-quotas")
    stub.add_response("list_service_quotas", {"Quotas": []}, {"ServiceCode": "sagemaker"})
    stub.add_response("list_aws_default_service_quotas", {"Quotas": [_quota(NAME, 0)]}, {"ServiceCode": "sagemaker"})
    result = _check(client)
    assert result.status is Status.FAIL
    assert result.found == f"'{NAME}' = 0 (AWS default, L-1928E07B); {NEEDS}"
    assert (
        "aws service-quotas request-service-quota-increase --service-code sagemaker --quota-code L-1928E07B "
        "--desired-value 8 --region us-east-1"
    ) in result.fix


def test_warns_when_autoscaling_cannot_reach_the_maximum(stubbed: Stubbed) -> None:
    client, stub = stubbed("service-quotas")
    stub.add_response("list_service_quotas", {"Quotas": [_quota(NAME, 2)]}, {"ServiceCode": "sagemaker"})
    result = _check(client)
    assert result.status is Status.WARN
    assert result.found.endswith("autoscaling stops at 2")
    assert "relay:ttsMaxInstances=1" in result.fix  # an update at 1 instance needs the other one


def test_fails_when_the_instance_type_has_no_quota_in_the_region(stubbed: Stubbed) -> None:
    client, stub = stubbed("service-quotas")
    stub.add_response("list_service_quotas", {"Quotas": []}, {"ServiceCode": "sagemaker"})
    stub.add_response("list_aws_default_service_quotas", {"Quotas": []}, {"ServiceCode": "sagemaker"})
    result = _check(client)
    assert result.status is Status.FAIL
    assert "not offered here" in result.found


def test_fails_when_the_quotas_cannot_be_read(stubbed: Stubbed) -> None:
    client, stub = stubbed("service-quotas")
    stub.add_client_error("list_service_quotas", "AccessDeniedException", "no servicequotas:ListServiceQuotas")
    result = _check(client)
    assert result.status is Status.FAIL
    assert "AccessDeniedException" in result.found
    assert "servicequotas:ListServiceQuotas" in result.fix
