"""The cleanup workflow executed under moto with the real task functions (AgentCore through an in-memory control
plane): default and full cleanups, dry run, bounded waits, refusals, and a run interrupted half-way then re-run."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from moto.ecr.models import ECRBackend
from moto.sagemaker.exceptions import ValidationError
from moto.sagemaker.models import SageMakerModelBackend

from relay_functions.ops import agent_runtimes
from relay_functions.ops.cleanup_agent_runtime import handler as agent_runtime_handler
from relay_functions.ops.cleanup_bucket import handler as bucket_handler
from relay_functions.ops.cleanup_repository import handler as repository_handler
from relay_functions.ops.errors import SharedResourceError
from relay_local.ops_workflows import InProcessLambdas, WorkflowRun, function_arn, run_workflow, seed_deployment

from .conftest import REPO_ROOT, TEST_VALUES
from .fakes import InMemoryAgentRuntimes, crash_first_call

EVERYTHING = {
    "agent_runtime": True,
    "sagemaker_endpoint": True,
    "weights_bucket": True,
    "history_bucket": True,
    "ecr_repository": True,
}


@pytest.fixture
def agentcore(monkeypatch: pytest.MonkeyPatch) -> InMemoryAgentRuntimes:
    control = InMemoryAgentRuntimes()
    control.add(TEST_VALUES["AgentRuntimeId"], endpoints={"DEFAULT": "READY", "canary": "READY"}, polls_until_gone=1)
    monkeypatch.setattr(agent_runtimes, "make_control", lambda: control)
    return control


@pytest.fixture
def deployment(lambdas: InProcessLambdas, agentcore: InMemoryAgentRuntimes) -> None:
    """A deployed stack in moto: model, endpoint config, endpoint, a versioned weights bucket, a history bucket
    holding a conversation, an ECR repository; and the AgentCore runtime in the in-memory control plane."""
    seed_deployment()


STATES_SEEN: set[str] = set()


def cleanup(definition: Callable[..., str], request: dict[str, Any], **overrides: str) -> WorkflowRun:
    run = run_workflow(definition("cleanup", **overrides), request)
    STATES_SEEN.update(run.states)
    return run


def named(items: list[dict[str, Any]]) -> set[str]:
    return {str(item["name"]) for item in items}


def test_default_cleanup_removes_runtime_and_endpoint_and_keeps_the_bucket_and_images(
    deployment: None, agentcore: InMemoryAgentRuntimes, definition: Callable[..., str]
) -> None:
    run = cleanup(definition, {})
    assert run.status == "SUCCEEDED", run.cause
    report = run.output
    assert report["done"] is True
    assert report["parts"] == {
        "agent_runtime": True,
        "sagemaker_endpoint": True,
        "weights_bucket": False,
        "history_bucket": False,
        "ecr_repository": False,
    }
    assert agentcore.runtimes == {}
    assert (
        agentcore.calls[:2] == ["delete_endpoint canary", "delete_runtime"]
        or "delete_endpoint canary" in agentcore.calls
    )
    assert agentcore.calls.index("delete_endpoint canary") < agentcore.calls.index("delete_runtime")
    assert "WaitForAgentRuntime" in run.states  # the runtime was DELETING for a read: the workflow waited
    assert boto3.client("sagemaker").list_endpoints()["Endpoints"] == []
    assert boto3.client("sagemaker").list_models()["Models"] == []
    assert named(report["billable"]) == {
        TEST_VALUES["WeightsBucketName"],
        TEST_VALUES["HistoryBucketName"],
        TEST_VALUES["EcrRepositoryName"],
    }
    assert report["nothing_billable_left"] is False
    assert report["requested_remaining"] == []


def test_dry_run_lists_what_would_go_and_deletes_nothing(
    deployment: None, agentcore: InMemoryAgentRuntimes, definition: Callable[..., str]
) -> None:
    run = cleanup(definition, {"parts": EVERYTHING, "dry_run": True})
    assert run.status == "SUCCEEDED", run.cause
    assert run.output["dry_run"] is True
    assert named(run.output["would_delete"]) == {
        TEST_VALUES[k]
        for k in (
            "AgentRuntimeId",
            "EndpointName",
            "EndpointConfigName",
            "ModelName",
            "WeightsBucketName",
            "HistoryBucketName",
            "EcrRepositoryName",
        )
    }
    assert agentcore.calls == []
    assert len(boto3.client("sagemaker").list_endpoints()["Endpoints"]) == 1
    assert "DeleteEndpoint" not in run.states


def test_cleanup_of_everything_leaves_nothing_billable(
    deployment: None, agentcore: InMemoryAgentRuntimes, definition: Callable[..., str]
) -> None:
    run = cleanup(definition, {"parts": EVERYTHING})
    assert run.status == "SUCCEEDED", run.cause
    assert run.output["nothing_billable_left"] is True
    assert run.output["remaining"] == []
    buckets = [b["Name"] for b in boto3.client("s3").list_buckets()["Buckets"]]
    assert TEST_VALUES["WeightsBucketName"] not in buckets
    assert TEST_VALUES["HistoryBucketName"] not in buckets, "every user's stored conversations go with it"
    assert boto3.client("ecr").describe_repositories()["repositories"] == []


def test_the_history_bucket_goes_only_when_asked_and_takes_every_conversation(
    deployment: None, agentcore: InMemoryAgentRuntimes, definition: Callable[..., str]
) -> None:
    s3 = boto3.client("s3")
    history = TEST_VALUES["HistoryBucketName"]
    assert s3.list_objects_v2(Bucket=history)["KeyCount"] == 3  # a stored conversation
    run = cleanup(definition, {"parts": {"history_bucket": True, "agent_runtime": False, "sagemaker_endpoint": False}})
    assert run.status == "SUCCEEDED", run.cause
    assert run.output["done"] is True
    assert "EmptyHistoryBucket" in run.states and "EmptyWeightsBucket" not in run.states
    buckets = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert history not in buckets and TEST_VALUES["WeightsBucketName"] in buckets


def test_a_history_bucket_that_cannot_be_emptied_fails_naming_it(
    deployment: None, lambdas: InProcessLambdas, agentcore: InMemoryAgentRuntimes, definition: Callable[..., str]
) -> None:
    lambdas.handlers[function_arn("CleanupBucketFunctionArn")] = crash_first_call(bucket_handler)
    only_history = {"history_bucket": True, "agent_runtime": False, "sagemaker_endpoint": False}
    first = cleanup(definition, {"parts": only_history})
    assert first.status == "FAILED"
    assert first.error == "EmptyHistoryBucket.Failed"
    second = cleanup(definition, {"parts": only_history})
    assert second.status == "SUCCEEDED", second.cause
    assert second.output["done"] is True


def test_a_cleanup_interrupted_half_way_finishes_when_run_again(
    deployment: None, lambdas: InProcessLambdas, agentcore: InMemoryAgentRuntimes, definition: Callable[..., str]
) -> None:
    lambdas.handlers[function_arn("CleanupBucketFunctionArn")] = crash_first_call(bucket_handler)
    first = cleanup(definition, {"parts": EVERYTHING})
    assert first.status == "FAILED"
    assert first.error == "EmptyWeightsBucket.Failed"
    assert "killed half-way" in (first.cause or "")
    assert boto3.client("sagemaker").list_endpoints()["Endpoints"] == []  # done before the crash
    assert len(boto3.client("ecr").describe_repositories()["repositories"]) == 1  # not reached

    second = cleanup(definition, {"parts": EVERYTHING})
    assert second.status == "SUCCEEDED", second.cause
    # the endpoint, config and model were already gone: their delete calls failed with "not found", which counts
    assert set(second.output["delete_errors"]) == {"endpoint", "endpoint_config", "model"}
    assert second.output["done"] is True
    assert second.output["nothing_billable_left"] is True
    assert second.output["remaining"] == []


def test_invalid_parts_fail_at_plan_naming_the_valid_parts(
    deployment: None, agentcore: InMemoryAgentRuntimes, definition: Callable[..., str]
) -> None:
    run = cleanup(definition, {"parts": {"database": True}})
    assert run.status == "FAILED"
    assert run.error == "Plan.Failed"
    assert "unknown part(s) database" in (run.cause or "")
    assert "weights_bucket" in (run.cause or "")
    assert agentcore.calls == []


def test_a_runtime_in_delete_failed_fails_naming_the_step(
    deployment: None, agentcore: InMemoryAgentRuntimes, definition: Callable[..., str]
) -> None:
    agentcore.runtimes[TEST_VALUES["AgentRuntimeId"]].status = "DELETE_FAILED"
    run = cleanup(definition, {})
    assert run.status == "FAILED"
    assert run.error == "DeleteAgentRuntime.Failed"
    assert "DELETE_FAILED" in (run.cause or "")


def test_a_runtime_that_never_goes_times_out_after_the_bounded_wait(
    deployment: None, agentcore: InMemoryAgentRuntimes, definition: Callable[..., str]
) -> None:
    agentcore.runtimes[TEST_VALUES["AgentRuntimeId"]].never_goes = True
    run = cleanup(definition, {}, DeleteMaxPolls="3")
    assert run.status == "FAILED"
    assert run.error == "DeleteAgentRuntime.TimedOut"
    assert run.states.count("WaitForAgentRuntime") == 3


@pytest.fixture
def slow_endpoint_deletion(monkeypatch: pytest.MonkeyPatch) -> None:
    """SageMaker deletes endpoints asynchronously (``Deleting`` for minutes); moto deletes at once. Here a deleted
    endpoint stays ``Deleting``, as a stuck deletion would."""

    def delete_endpoint(self: SageMakerModelBackend, endpoint_name: str) -> None:
        self.endpoints[endpoint_name].endpoint_status = "Deleting"

    monkeypatch.setattr(SageMakerModelBackend, "delete_endpoint", delete_endpoint)


def test_an_endpoint_stuck_deleting_times_out_after_the_bounded_wait(
    deployment: None, slow_endpoint_deletion: None, definition: Callable[..., str]
) -> None:
    run = cleanup(definition, {"parts": {"agent_runtime": False}}, DeleteMaxPolls="2")
    assert run.status == "FAILED"
    assert run.error == "DeleteEndpoint.TimedOut"
    assert run.states.count("CheckEndpointGone") == 3


def refuse(monkeypatch: pytest.MonkeyPatch, cls: type, method: str) -> None:
    """Make a moto control-plane call refuse, as IAM or a conflict would in AWS."""

    def refused(self: Any, *args: Any, **kwargs: Any) -> None:
        raise ValidationError(message=f"{method} refused by the test")

    monkeypatch.setattr(cls, method, refused)


ONLY_ENDPOINT = {"agent_runtime": False, "sagemaker_endpoint": True}
ONLY_REPOSITORY = {"agent_runtime": False, "sagemaker_endpoint": False, "ecr_repository": True}


@pytest.mark.parametrize(
    ("cls", "method", "step", "parts"),
    [
        (SageMakerModelBackend, "delete_endpoint", "DeleteEndpoint", ONLY_ENDPOINT),
        (SageMakerModelBackend, "delete_endpoint_config", "DeleteEndpointConfig", ONLY_ENDPOINT),
        (SageMakerModelBackend, "delete_model", "DeleteModel", ONLY_ENDPOINT),
        (ECRBackend, "delete_repository", "DeleteRepository", ONLY_REPOSITORY),
    ],
)
def test_a_refused_deletion_fails_naming_the_step_and_quoting_the_refusal(
    deployment: None,
    monkeypatch: pytest.MonkeyPatch,
    definition: Callable[..., str],
    cls: type,
    method: str,
    step: str,
    parts: dict[str, bool],
) -> None:
    refuse(monkeypatch, cls, method)
    run = cleanup(definition, {"parts": parts})
    assert run.status == "FAILED"
    assert run.error == f"{step}.Failed"
    assert "still exists" in (run.cause or "")
    assert f"{method} refused by the test" in (run.cause or "")


def test_a_crashed_final_inventory_fails_naming_the_step(
    deployment: None, lambdas: InProcessLambdas, definition: Callable[..., str]
) -> None:
    original = lambdas.handlers[function_arn("CleanupInventoryFunctionArn")]

    def inventory_crashing_at_the_end(event: dict[str, Any], context: object) -> Any:
        if event.get("stage") == "final":
            raise RuntimeError("inventory crashed (injected by the test)")
        return original(event, context)

    lambdas.handlers[function_arn("CleanupInventoryFunctionArn")] = inventory_crashing_at_the_end
    run = cleanup(definition, {})
    assert run.status == "FAILED"
    assert run.error == "FinalInventory.Failed"


BOOTSTRAP_REPOSITORY = "cdk-hnb659fds-container-assets-123456789012-eu-west-1"


def test_the_cdk_bootstrap_repository_is_refused_at_plan_before_anything_is_deleted(
    deployment: None, agentcore: InMemoryAgentRuntimes, definition: Callable[..., str]
) -> None:
    boto3.client("ecr").create_repository(repositoryName=BOOTSTRAP_REPOSITORY)
    run = cleanup(definition, {"parts": EVERYTHING}, EcrRepositoryName=BOOTSTRAP_REPOSITORY)
    assert run.status == "FAILED"
    assert run.error == "Plan.Failed"
    message = json.loads(run.cause or "{}")["errorMessage"]
    assert "CDK bootstrap" in message and '"ecr_repository": false' in message
    assert agentcore.calls == []
    assert len(boto3.client("sagemaker").list_endpoints()["Endpoints"]) == 1
    assert BOOTSTRAP_REPOSITORY in [
        r["repositoryName"] for r in boto3.client("ecr").describe_repositories()["repositories"]
    ]

    default = cleanup(definition, {}, EcrRepositoryName=BOOTSTRAP_REPOSITORY)  # not asked for: the cleanup runs
    assert default.status == "SUCCEEDED", default.cause


def test_the_repository_task_refuses_the_cdk_bootstrap_repository_itself(deployment: None) -> None:
    ecr = boto3.client("ecr")
    ecr.create_repository(repositoryName=BOOTSTRAP_REPOSITORY)
    with pytest.raises(SharedResourceError, match="shared by every CDK app"):
        repository_handler({"repository": BOOTSTRAP_REPOSITORY}, None)
    assert BOOTSTRAP_REPOSITORY in [r["repositoryName"] for r in ecr.describe_repositories()["repositories"]]


def test_agent_runtime_step_is_idempotent_once_gone(agentcore: InMemoryAgentRuntimes) -> None:
    agentcore.runtimes.clear()
    assert agent_runtime_handler({"runtime_id": TEST_VALUES["AgentRuntimeId"]}, None)["state"] == "gone"
    assert agentcore.calls == []


def test_every_state_was_executed_by_the_tests_above() -> None:
    states = set(json.loads((REPO_ROOT / "statemachines" / "cleanup.asl.json").read_text())["States"])
    if not STATES_SEEN:
        pytest.skip("run the whole module: this test checks what the scenarios above executed")
    assert states - STATES_SEEN == set()
