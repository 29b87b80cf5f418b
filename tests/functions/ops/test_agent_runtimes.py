"""The AgentCore control-plane adapter (boto3, checked with botocore's Stubber: moto has no bedrock-agentcore-control)
and the runtime cleanup step over the in-memory control plane."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from botocore.stub import Stubber

from relay_functions.ops.agent_runtimes import Boto3AgentRuntimes, RuntimeEndpoint
from relay_functions.ops.cleanup_agent_runtime import step
from relay_functions.ops.errors import DeleteRefusedError

from .fakes import InMemoryAgentRuntimes

RUNTIME = "kokoro_relay_agent-AbCdEf1234"


@pytest.fixture
def stubbed() -> Iterator[tuple[Boto3AgentRuntimes, Stubber]]:
    client = boto3.client(
        "bedrock-agentcore-control", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Stubber(client) as stubber:
        yield Boto3AgentRuntimes(client), stubber
        stubber.assert_no_pending_responses()


def test_status_is_read_and_not_found_is_none(stubbed: tuple[Boto3AgentRuntimes, Stubber]) -> None:
    control, stubber = stubbed
    stubber.add_response(
        "get_agent_runtime",
        {
            "agentRuntimeArn": f"arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/{RUNTIME}",
            "agentRuntimeName": "kokoro_relay_agent",
            "agentRuntimeId": RUNTIME,
            "agentRuntimeVersion": "1",
            "createdAt": "2026-11-30T00:00:00Z",
            "lastUpdatedAt": "2026-11-30T00:00:00Z",
            "roleArn": "arn:aws:iam::123456789012:role/agent",
            "networkConfiguration": {"networkMode": "PUBLIC"},
            "status": "DELETING",
            "lifecycleConfiguration": {},
        },
        {"agentRuntimeId": RUNTIME},
    )
    stubber.add_client_error("get_agent_runtime", "ResourceNotFoundException", http_status_code=404)
    assert control.runtime_status(RUNTIME) == "DELETING"
    assert control.runtime_status(RUNTIME) is None


def test_endpoints_follow_pagination(stubbed: tuple[Boto3AgentRuntimes, Stubber]) -> None:
    control, stubber = stubbed

    def endpoint(name: str, status: str) -> dict[str, object]:
        arn = f"arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/{RUNTIME}"
        return {
            "name": name,
            "agentRuntimeEndpointArn": f"{arn}/runtime-endpoint/{name}",
            "agentRuntimeArn": arn,
            "status": status,
            "id": name,
            "createdAt": "2026-11-30T00:00:00Z",
            "lastUpdatedAt": "2026-11-30T00:00:00Z",
        }

    stubber.add_response(
        "list_agent_runtime_endpoints", {"runtimeEndpoints": [endpoint("DEFAULT", "READY")], "nextToken": "t"}
    )
    stubber.add_response(
        "list_agent_runtime_endpoints",
        {"runtimeEndpoints": [endpoint("canary", "DELETING")]},
        {"agentRuntimeId": RUNTIME, "nextToken": "t"},
    )
    assert control.endpoints(RUNTIME) == [RuntimeEndpoint("DEFAULT", "READY"), RuntimeEndpoint("canary", "DELETING")]


def test_deleting_what_is_gone_is_fine_and_other_refusals_propagate(
    stubbed: tuple[Boto3AgentRuntimes, Stubber],
) -> None:
    control, stubber = stubbed
    stubber.add_client_error("delete_agent_runtime", "ResourceNotFoundException", http_status_code=404)
    stubber.add_client_error("delete_agent_runtime_endpoint", "ResourceNotFoundException", http_status_code=404)
    stubber.add_client_error("delete_agent_runtime", "AccessDeniedException", "not allowed", http_status_code=403)
    control.delete_runtime(RUNTIME)
    control.delete_endpoint(RUNTIME, "canary")
    with pytest.raises(Exception, match="AccessDeniedException"):
        control.delete_runtime(RUNTIME)


def test_a_refused_deletion_becomes_delete_refused_naming_the_code(stubbed: tuple[Boto3AgentRuntimes, Stubber]) -> None:
    control, stubber = stubbed
    stubber.add_client_error("get_agent_runtime", "AccessDeniedException", "no", http_status_code=403)
    with pytest.raises(DeleteRefusedError, match="AccessDeniedException: no"):
        step(RUNTIME, control)


def test_the_step_removes_extra_endpoints_before_the_runtime() -> None:
    control = InMemoryAgentRuntimes()
    control.add(RUNTIME, endpoints={"DEFAULT": "READY", "canary": "READY", "beta": "READY"}, polls_until_gone=0)
    assert step(RUNTIME, control) == {"state": "deleting_endpoints", "endpoints": ["canary", "beta"]}
    assert control.calls == ["delete_endpoint canary", "delete_endpoint beta"]
    assert step(RUNTIME, control)["state"] == "deleting_runtime"
    assert control.calls[-1] == "delete_runtime"
    assert step(RUNTIME, control)["state"] == "gone"
    assert step(RUNTIME, control)["state"] == "gone"  # idempotent
