"""The runner: every check in order against one (stubbed) account; AWS checks skipped without credentials."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.infra.preflight.stubs import ACCOUNT, REGION, Stubbed, fake_docker

from relay_infra.preflight.result import Status
from relay_infra.preflight.runner import Target, report, run_checks

TARGET = Target(
    instance_type="ml.g5.xlarge",
    min_instances=1,
    max_instances=4,
    model_id="amazon.nova-lite-v1:0",
    inference_ami_version="al2-ami-sagemaker-inference-gpu-3-1",
    tts_image_uri=None,
    agent_image_uri=None,
)
NAMES = [
    "credentials",
    "cdk-bootstrap",
    "quota",
    "instance-type",
    "bedrock-model",
    "transaction-search",
    "lambda-concurrency",
    "inference-ami",
    "docker",
    "cost",
]


class FakeSession:
    """Stands in for boto3's Session: hands out the stubbed clients and records which services were asked for."""

    def __init__(self, clients: dict[str, Any], region_name: str | None = REGION) -> None:
        self.clients = clients
        self.region_name = region_name
        self.asked: list[str] = []

    def client(self, service: str, region_name: str | None = None, config: Any = None) -> Any:
        self.asked.append(service)
        return self.clients[service]


def _answering_account(stubbed: Stubbed) -> dict[str, Any]:
    clients = {}
    services = ("sts", "ssm", "cloudformation", "service-quotas", "sagemaker", "application-autoscaling")
    for service in (*services, "bedrock", "xray", "lambda", "pricing"):
        clients[service], stub = stubbed(service)
        if service == "sts":
            stub.add_response("get_caller_identity", {"Account": ACCOUNT, "Arn": f"arn:aws:iam::{ACCOUNT}:user/d"})
        elif service == "ssm":
            stub.add_response(
                "get_parameter", {"Parameter": {"Name": "/cdk-bootstrap/hnb659fds/version", "Value": "28"}}
            )
        elif service == "service-quotas":
            quota = {"QuotaName": "ml.g5.xlarge for endpoint usage", "QuotaCode": "L-1", "Value": 8.0}
            stub.add_response("list_service_quotas", {"Quotas": [quota]})
        elif service == "sagemaker":
            stub.add_client_error(
                "describe_endpoint", "ValidationException", 'Could not find endpoint "kokoro-relay-dev-tts".'
            )
        elif service == "bedrock":
            stub.add_response(
                "get_foundation_model_availability",
                {
                    "modelId": "amazon.nova-lite-v1:0",
                    "agreementAvailability": {"status": "AVAILABLE"},
                    "authorizationStatus": "AUTHORIZED",
                    "entitlementAvailability": "AVAILABLE",
                    "regionAvailability": "AVAILABLE",
                },
            )
        elif service == "xray":
            stub.add_response("get_trace_segment_destination", {"Destination": "CloudWatchLogs", "Status": "ACTIVE"})
        elif service == "lambda":
            limits = {"ConcurrentExecutions": 1000, "UnreservedConcurrentExecutions": 1000}
            stub.add_response("get_account_settings", {"AccountLimit": limits})
        elif service == "pricing":
            product = {
                "product": {"attributes": {"component": "Hosting"}},
                "terms": {
                    "OnDemand": {"t": {"priceDimensions": {"d": {"unit": "Hrs", "pricePerUnit": {"USD": "1.408"}}}}}
                },
            }
            stub.add_response("get_products", {"PriceList": [json.dumps(product)], "FormatVersion": "aws_v1"})
    return clients


def test_every_check_passes_against_a_ready_account(stubbed: Stubbed, tmp_path: Path) -> None:
    results = run_checks(FakeSession(_answering_account(stubbed)), TARGET, docker_command=fake_docker(tmp_path))
    assert [result.name for result in results] == NAMES
    assert [result.status for result in results] == [Status.PASS] * len(NAMES), [r.line() for r in results]
    lines, status = report(results)
    assert status == 0
    assert len(lines) == len(NAMES) + 1
    assert "Pricing API" in lines[NAMES.index("cost")]


def test_without_credentials_the_aws_checks_are_skipped_and_nothing_else_is_called(
    stubbed: Stubbed, tmp_path: Path
) -> None:
    sts, stub = stubbed("sts")
    stub.add_client_error("get_caller_identity", "InvalidClientTokenId", "The security token is invalid")
    session = FakeSession({"sts": sts}, region_name=None)
    results = run_checks(session, TARGET, docker_command=fake_docker(tmp_path))
    assert session.asked == ["sts"]
    assert [result.name for result in results] == NAMES
    by_name = {result.name: result for result in results}
    assert by_name["credentials"].status is Status.FAIL
    skipped = ("cdk-bootstrap", "quota", "instance-type", "bedrock-model", "transaction-search", "lambda-concurrency")
    assert {by_name[name].status for name in skipped} == {Status.SKIP}
    assert by_name["inference-ami"].status is Status.PASS
    assert by_name["docker"].status is Status.PASS
    assert "built-in table" in by_name["cost"].found
    _, status = report(results)
    assert status == 1
