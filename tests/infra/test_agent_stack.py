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


def test_runtime_role_trusts_only_runtimes_of_its_own_name(relay_app: SynthesizedApp) -> None:
    """A runtime id is ``<name>-<10 characters>`` and names hold no hyphen: ``runtime/kokoro_relay_dev-*`` admits
    this runtime and its endpoints, never another environment's runtime whose name starts the same."""
    from fnmatch import fnmatchcase  # noqa: PLC0415

    roles = [
        r["Properties"]
        for r in relay_app.template("Agent")["Resources"].values()
        if r["Type"] == "AWS::IAM::Role"
        and "bedrock-agentcore.amazonaws.com" in rendered(r["Properties"]["AssumeRolePolicyDocument"])
    ]
    assert len(roles) == 1
    (statement,) = roles[0]["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    source = statement["Condition"]["ArnLike"]["aws:SourceArn"]
    pattern = "".join(part if isinstance(part, str) else "<" + rendered(part) + ">" for part in source["Fn::Join"][1])
    assert pattern.endswith(":runtime/kokoro_relay_dev-*")
    prefix = pattern.removesuffix("kokoro_relay_dev-*")
    assert fnmatchcase(prefix + "kokoro_relay_dev-a1B2c3D4e5", pattern)
    assert fnmatchcase(prefix + "kokoro_relay_dev-a1B2c3D4e5/runtime-endpoint/DEFAULT", pattern)
    for other in ("kokoro_relay_dev2-a1B2c3D4e5", "kokoro_relay_dev_eu-a1B2c3D4e5", "kokoro_relay_devx-a1B2c3D4e5"):
        assert not fnmatchcase(prefix + other, pattern)


def test_one_shared_xray_policy_instead_of_one_per_environment(relay_app: SynthesizedApp) -> None:
    """X-Ray allows five resource policies per account: no stack creates its own; every environment puts the same
    policy (covering every AgentCore runtime of the account) under one name, and never deletes it."""
    from relay_infra.constructs.xray_delivery import POLICY_NAME  # noqa: PLC0415

    for part in relay_app.templates:
        assert not relay_app.resources(part, "AWS::XRay::ResourcePolicy"), part
    template = relay_app.template("Agent")
    (call,) = [r for r in template["Resources"].values() if r["Type"] == "Custom::AWS"]
    create = rendered(call["Properties"]["Create"])
    assert rendered(call["Properties"]["Update"]) == create
    assert "Delete" not in call["Properties"]
    assert "putResourcePolicy" in create and POLICY_NAME in create
    assert ":runtime/*" in create and "delivery.logs.amazonaws.com" in create
    assert "kokoro_relay_dev" not in create and "dev" not in POLICY_NAME.lower()
    (logical_id,) = [k for k, r in template["Resources"].items() if r["Type"] == "Custom::AWS"]
    (destination,) = relay_app.resources("Agent", "AWS::Logs::DeliveryDestination")
    assert destination["Properties"]["DeliveryDestinationType"] == "XRAY"
    assert logical_id in destination["DependsOn"]
