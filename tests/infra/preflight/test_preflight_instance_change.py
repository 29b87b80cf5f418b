"""The instance-type check: SageMaker refuses to change the instance type of an autoscaled variant, so preflight
fails such a deploy with the two deploys that make the change."""

from __future__ import annotations

from typing import Any

from tests.infra.preflight.stubs import Stubbed

from relay_infra.preflight.instance_change import check_instance_type_change
from relay_infra.preflight.result import Status

ENDPOINT = "kokoro-relay-dev-tts"
CONFIG = "kokoro-relay-dev-tts-0123456789ab"
TARGET_QUERY = {
    "ServiceNamespace": "sagemaker",
    "ResourceIds": [f"endpoint/{ENDPOINT}/variant/AllTraffic"],
    "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
}


def _deployed(stubbed: Stubbed, instance_type: str) -> Any:
    sagemaker, stub = stubbed("sagemaker")
    stub.add_response(
        "describe_endpoint",
        {
            "EndpointName": ENDPOINT,
            "EndpointArn": f"arn:aws:sagemaker:us-east-1:111122223333:endpoint/{ENDPOINT}",
            "EndpointConfigName": CONFIG,
            "EndpointStatus": "InService",
            "CreationTime": "2026-01-01T00:00:00Z",
            "LastModifiedTime": "2026-01-01T00:00:00Z",
        },
        {"EndpointName": ENDPOINT},
    )
    stub.add_response(
        "describe_endpoint_config",
        {
            "EndpointConfigName": CONFIG,
            "EndpointConfigArn": f"arn:aws:sagemaker:us-east-1:111122223333:endpoint-config/{CONFIG}",
            "ProductionVariants": [{"VariantName": "AllTraffic", "InstanceType": instance_type}],
            "CreationTime": "2026-01-01T00:00:00Z",
        },
        {"EndpointConfigName": CONFIG},
    )
    return sagemaker


def _targets(stubbed: Stubbed, registered: bool) -> Any:
    client, stub = stubbed("application-autoscaling")
    target = {
        "ServiceNamespace": "sagemaker",
        "ResourceId": f"endpoint/{ENDPOINT}/variant/AllTraffic",
        "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
        "MinCapacity": 1,
        "MaxCapacity": 4,
        "RoleARN": "arn:aws:iam::111122223333:role/r",
        "CreationTime": "2026-01-01T00:00:00Z",
    }
    stub.add_response("describe_scalable_targets", {"ScalableTargets": [target] if registered else []}, TARGET_QUERY)
    return client


def _check(sagemaker: Any, autoscaling_client: Any, instance_type: str = "ml.g6.xlarge", on: bool = True) -> Any:
    return check_instance_type_change(
        sagemaker, autoscaling_client, endpoint=ENDPOINT, instance_type=instance_type, autoscaling=on
    )


def test_fails_a_change_of_an_autoscaled_variants_instance_type_with_the_two_deploys(stubbed: Stubbed) -> None:
    result = _check(_deployed(stubbed, "ml.g5.xlarge"), _targets(stubbed, registered=True))
    assert result.status is Status.FAIL
    assert "runs ml.g5.xlarge; this deploy asks for ml.g6.xlarge" in result.found
    first = "-c relay:ttsInstanceType=ml.g5.xlarge -c relay:ttsAutoscaling=false"
    second = "-c relay:ttsInstanceType=ml.g6.xlarge'"
    assert first in result.fix
    assert second in result.fix
    assert result.fix.index(first) < result.fix.index(second)


def test_passes_the_second_deploy_once_the_scaling_target_is_gone(stubbed: Stubbed) -> None:
    result = _check(_deployed(stubbed, "ml.g5.xlarge"), _targets(stubbed, registered=False))
    assert result.status is Status.PASS
    assert "not a scaling target" in result.found


def test_passes_the_same_instance_type_without_asking_autoscaling(stubbed: Stubbed) -> None:
    autoscaling_client, _ = stubbed("application-autoscaling")  # no response queued: a call would fail the test
    result = _check(_deployed(stubbed, "ml.g6.xlarge"), autoscaling_client)
    assert result.status is Status.PASS
    assert result.found == f"'{ENDPOINT}' runs ml.g6.xlarge"


def test_passes_before_the_first_deploy(stubbed: Stubbed) -> None:
    sagemaker, stub = stubbed("sagemaker")
    stub.add_client_error("describe_endpoint", "ValidationException", f'Could not find endpoint "{ENDPOINT}".')
    autoscaling_client, _ = stubbed("application-autoscaling")
    result = _check(sagemaker, autoscaling_client)
    assert result.status is Status.PASS
    assert result.found == f"no endpoint '{ENDPOINT}' yet"


def test_fails_when_the_endpoint_cannot_be_read(stubbed: Stubbed) -> None:
    sagemaker, stub = stubbed("sagemaker")
    stub.add_client_error("describe_endpoint", "AccessDeniedException", "not authorized")
    autoscaling_client, _ = stubbed("application-autoscaling")
    result = _check(sagemaker, autoscaling_client)
    assert result.status is Status.FAIL
    assert "sagemaker:DescribeEndpoint" in result.fix
