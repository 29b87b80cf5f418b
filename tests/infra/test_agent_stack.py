"""Agent stack: the AgentCore runtime, its environment, and a role limited to one endpoint and one model."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk.assertions import Match
from tests.infra.iam_statements import as_list, granting, rendered

if TYPE_CHECKING:
    from tests.infra.conftest import SynthesizedApp


def test_runtime_points_the_agent_at_the_endpoint_and_model(relay_app: SynthesizedApp) -> None:
    relay_app.assertions("Agent").has_resource_properties(
        "AWS::BedrockAgentCore::Runtime",
        {
            "AgentRuntimeName": "kokoro_relay_dev",
            "EnvironmentVariables": Match.object_like(
                {
                    "VOICE_AGENT_TRANSPORT": "sagemaker",
                    "VOICE_AGENT_SAGEMAKER_ENDPOINT": Match.any_value(),
                    "VOICE_AGENT_MODEL": "bedrock",
                    "VOICE_AGENT_MODEL_ID": "amazon.nova-lite-v1:0",
                }
            ),
        },
    )
    variables = relay_app.template("Agent")["Resources"]
    (runtime,) = [r for r in variables.values() if r["Type"] == "AWS::BedrockAgentCore::Runtime"]
    assert "VOICE_AGENT_VOICE" not in runtime["Properties"]["EnvironmentVariables"], (
        "no relay:voice: the endpoint's default voice (af_heart once the English packs are uploaded)"
    )


def test_role_streams_to_the_one_endpoint_only(relay_app: SynthesizedApp) -> None:
    template = relay_app.template("Agent")
    found = granting(template, "sagemaker:InvokeEndpointWithBidirectionalStream")
    assert len(found) == 1
    assert set(as_list(found[0]["Action"])) == {
        "sagemaker:InvokeEndpointWithBidirectionalStream",
        "sagemaker:InvokeEndpoint",
    }
    resources = as_list(found[0]["Resource"])
    assert len(resources) == 1
    # the Speech stack's endpoint by its lowercase name (SageMaker ARNs are lowercase; IAM matches case-sensitively)
    assert rendered(resources[0]).endswith(':endpoint/kokoro-relay-dev-tts"]]}')


def test_role_invokes_the_configured_model_only(relay_app: SynthesizedApp) -> None:
    found = granting(relay_app.template("Agent"), "bedrock:InvokeModel")
    assert len(found) == 1
    assert "bedrock:InvokeModelWithResponseStream" in as_list(found[0]["Action"])
    assert "foundation-model/amazon.nova-lite-v1:0" in rendered(found[0]["Resource"])
    assert "*" not in rendered(found[0]["Resource"])


def test_runtime_role_pulls_the_agent_image(relay_app: SynthesizedApp) -> None:
    pulls = granting(relay_app.template("Agent"), "ecr:BatchGetImage")
    assert pulls and "container-assets" in rendered(pulls)
