"""The smoke-test workflow executed by moto's Step Functions (over HTTP, so the relay stack's own in-process AWS
calls are left alone) with the real check functions in-process against the real local relay stack: the real model
behind a WebSocket and POST /invocations, the agent through the local AgentCore data plane, the gateway over a real
WebSocket. Success and every failure path, each failure naming its step."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from moto.sagemaker.models import sagemaker_backends

from relay_local.ops_workflows import (
    ACCOUNT,
    REGION,
    InProcessLambdas,
    WorkflowRun,
    default_handlers,
    function_arn,
    moto_server,
    run_workflow,
)
from relay_local.relay_stack import AGENT_RUNTIME_ARN, RelayStack

from .conftest import REPO_ROOT, TEST_VALUES

pytestmark = pytest.mark.slow
STATES_SEEN: set[str] = set()
ENDPOINT = TEST_VALUES["EndpointName"]


@pytest.fixture(scope="module")
def relay(tts_server: Any) -> Iterator[RelayStack]:
    """The local relay (agent, AgentCore data plane, gateway, DynamoDB) over the session's TTS server."""
    with RelayStack(tts_url=tts_server.ws_url) as stack:
        yield stack


@pytest.fixture(scope="module")
def moto_url(relay: RelayStack) -> Iterator[str]:
    with moto_server() as url:
        sm = boto3.client("sagemaker", region_name=REGION, endpoint_url=url)
        sm.create_model(
            ModelName=TEST_VALUES["ModelName"],
            ExecutionRoleArn=f"arn:aws:iam::{ACCOUNT}:role/kokoro-relay-sagemaker",
            PrimaryContainer={"Image": f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/kokoro-relay:gpu"},
        )
        sm.create_endpoint_config(
            EndpointConfigName=TEST_VALUES["EndpointConfigName"],
            ProductionVariants=[
                {
                    "VariantName": "AllTraffic",
                    "ModelName": TEST_VALUES["ModelName"],
                    "InitialInstanceCount": 1,
                    "InstanceType": "ml.g4dn.xlarge",  # moto rejects the production ml.g5.xlarge
                }
            ],
        )
        sm.create_endpoint(EndpointName=ENDPOINT, EndpointConfigName=TEST_VALUES["EndpointConfigName"])
        yield url


@pytest.fixture
def smoke_env(relay: RelayStack, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the check functions read: the local stack's URLs, the runtime ARN the data plane hosts, a dev token."""
    monkeypatch.setenv("SMOKE_TTS_URL", relay.tts_url)
    monkeypatch.setenv("AGENT_RUNTIME_ARN", AGENT_RUNTIME_ARN)
    monkeypatch.setenv("GATEWAY_URL", relay.gateway_url)
    monkeypatch.setenv("SMOKE_USER_TOKEN", relay.dev_token("smoke-test"))


@pytest.fixture
def lambdas(smoke_env: None) -> Iterator[InProcessLambdas]:
    with InProcessLambdas(default_handlers()) as runtime:
        yield runtime


def endpoint_status(status: str) -> None:
    sagemaker_backends[ACCOUNT][REGION].endpoints[ENDPOINT].endpoint_status = status


@pytest.fixture
def endpoint_in_service(moto_url: str) -> Iterator[None]:
    endpoint_status("InService")
    yield
    endpoint_status("InService")


def smoke(definition: Callable[..., str], moto_url: str, **overrides: str) -> WorkflowRun:
    run = run_workflow(definition("smoke_test", **overrides), {"trigger": "test"}, endpoint_url=moto_url, timeout_s=240)
    STATES_SEEN.update(run.states)
    return run


def test_the_whole_relay_passes_and_its_figures_are_recorded(
    lambdas: InProcessLambdas,
    endpoint_in_service: None,
    moto_url: str,
    definition: Callable[..., str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = smoke(definition, moto_url)
    assert run.status == "SUCCEEDED", run.cause
    report = run.output
    assert report["passed"] is True
    kokoro = report["checks"]["kokoro"]
    assert [r["request_id"] for r in kokoro["requests"]] == ["smoke-1", "smoke-2"]
    assert all(r["pcm_frames"] >= 1 and r["audio_s"] > 0.5 for r in kokoro["requests"])
    assert report["checks"]["gateway"]["refused_status"] in (401, 403)
    figures = report["figures"]
    for name in (
        "KokoroSessionRequest1FirstAudio",
        "KokoroInvocationsFirstAudio",
        "AgentFirstAudio",
        "GatewayFirstAudio",
    ):
        assert figures[name] > 0
    emf = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    assert emf and emf[-1]["SmokeTestPassed"] == 1.0
    assert emf[-1]["GatewayFirstAudio"] == figures["GatewayFirstAudio"]


def test_a_failed_endpoint_fails_at_wait_for_endpoint(
    lambdas: InProcessLambdas, endpoint_in_service: None, moto_url: str, definition: Callable[..., str]
) -> None:
    endpoint_status("Failed")
    run = smoke(definition, moto_url)
    assert run.status == "FAILED"
    assert run.error == "SmokeTest.WaitForEndpointFailed"
    assert "is Failed" in (run.cause or "")
    assert "KokoroCheck" not in run.states


def test_an_endpoint_that_never_comes_up_times_out(
    lambdas: InProcessLambdas, endpoint_in_service: None, moto_url: str, definition: Callable[..., str]
) -> None:
    endpoint_status("Creating")
    run = smoke(definition, moto_url, EndpointMaxPolls="2")
    assert run.status == "FAILED"
    assert run.error == "SmokeTest.WaitForEndpointFailed"
    assert "still Creating after 2 checks" in (run.cause or "")
    assert run.states.count("WaitForEndpoint") == 2


def test_a_missing_endpoint_fails_at_wait_for_endpoint(
    lambdas: InProcessLambdas, endpoint_in_service: None, moto_url: str, definition: Callable[..., str]
) -> None:
    run = smoke(definition, moto_url, EndpointName="no-such-endpoint")
    assert run.status == "FAILED"
    assert run.error == "SmokeTest.WaitForEndpointFailed"
    assert "no-such-endpoint" in (run.cause or "")


def test_an_unreachable_container_fails_at_kokoro_check(
    lambdas: InProcessLambdas,
    endpoint_in_service: None,
    moto_url: str,
    definition: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SMOKE_TTS_URL", "ws://127.0.0.1:9/invocations-bidirectional-stream")
    run = smoke(definition, moto_url)
    assert run.status == "FAILED"
    assert run.error == "SmokeTest.KokoroCheckFailed"
    assert "KokoroCheck: SmokeCheckError: open a TTS session" in (run.cause or "")


def test_an_unknown_agent_runtime_fails_at_agent_check(
    lambdas: InProcessLambdas,
    endpoint_in_service: None,
    moto_url: str,
    definition: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENT_RUNTIME_ARN", AGENT_RUNTIME_ARN.replace("local0000", "gone0000"))
    run = smoke(definition, moto_url)
    assert run.status == "FAILED"
    assert run.error == "SmokeTest.AgentCheckFailed"
    assert "AgentCheck: SmokeCheckError: agent: invoking the runtime failed" in (run.cause or "")


def test_a_refused_test_user_fails_at_gateway_check(
    lambdas: InProcessLambdas,
    endpoint_in_service: None,
    moto_url: str,
    definition: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SMOKE_USER_TOKEN", "not-a-jwt")
    run = smoke(definition, moto_url)
    assert run.status == "FAILED"
    assert run.error == "SmokeTest.GatewayCheckFailed"
    assert "the test user's connection was refused (HTTP 401)" in (run.cause or "")


def test_a_report_that_cannot_be_recorded_fails_the_execution(
    lambdas: InProcessLambdas, endpoint_in_service: None, moto_url: str, definition: Callable[..., str]
) -> None:
    def crashing(event: dict[str, Any], context: object) -> Any:
        raise RuntimeError("metrics sink unavailable (injected by the test)")

    lambdas.handlers[function_arn("SmokeReportFunctionArn")] = crashing
    endpoint_status("Failed")
    run = smoke(definition, moto_url)
    assert run.status == "FAILED"
    assert run.error == "SmokeReport.Failed"


def test_every_state_was_executed_by_the_tests_above() -> None:
    states = set(json.loads((REPO_ROOT / "statemachines" / "smoke_test.asl.json").read_text())["States"])
    if not STATES_SEEN:
        pytest.skip("run the whole module: this test checks what the scenarios above executed")
    assert states - STATES_SEEN == set()
