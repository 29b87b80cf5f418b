"""Agent stack: the AgentCore runtime, its environment and session timeouts, a role limited to one endpoint, one
model and its history prefix, and the conversation-history bucket."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_cdk.assertions import Match
from tests.infra.iam_statements import as_list, granting, rendered, statements

from relay_core.agent.defaults import HISTORY_EXPIRY_DAYS, HISTORY_PREFIX
from relay_infra.constructs.voice_agent_runtime import IDLE_SESSION_TIMEOUT_S, MAX_SESSION_LIFETIME_S

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


def _history_bucket(relay_app: SynthesizedApp) -> tuple[str, dict[str, Any]]:
    (found,) = [
        (logical_id, resource)
        for logical_id, resource in relay_app.template("Agent")["Resources"].items()
        if resource["Type"] == "AWS::S3::Bucket"
    ]
    return found


def test_history_bucket_is_private_unversioned_and_expires_old_conversations(relay_app: SynthesizedApp) -> None:
    """Encrypted, public access blocked, TLS only, access-logged; not versioned (a cut or deleted conversation must
    leave no old version); every object expires HISTORY_EXPIRY_DAYS after it was written; retained on destroy."""
    logical_id, bucket = _history_bucket(relay_app)
    properties = bucket["Properties"]
    assert properties["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"] == {
        "SSEAlgorithm": "AES256"
    }
    assert properties["PublicAccessBlockConfiguration"] == dict.fromkeys(
        ("BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"), True
    )
    assert "VersioningConfiguration" not in properties
    assert properties["LoggingConfiguration"]["LogFilePrefix"] == "conversation-history/"
    (rule,) = properties["LifecycleConfiguration"]["Rules"]
    assert rule["Status"] == "Enabled" and rule["ExpirationInDays"] == HISTORY_EXPIRY_DAYS == 30
    assert "Prefix" not in rule and "Filter" not in rule, "the whole bucket expires"
    assert bucket["DeletionPolicy"] == "Retain"
    policies = relay_app.resources("Agent", "AWS::S3::BucketPolicy")
    assert any("aws:SecureTransport" in rendered(p) and logical_id in rendered(p) for p in policies)


def test_runtime_keeps_history_in_its_bucket_and_sets_both_session_timeouts(relay_app: SynthesizedApp) -> None:
    logical_id, _ = _history_bucket(relay_app)
    (runtime,) = relay_app.resources("Agent", "AWS::BedrockAgentCore::Runtime")
    properties = runtime["Properties"]
    variables = properties["EnvironmentVariables"]
    assert variables["VOICE_AGENT_HISTORY_BUCKET"] == {"Ref": logical_id}
    assert variables["VOICE_AGENT_HISTORY_PREFIX"] == HISTORY_PREFIX
    assert properties["LifecycleConfiguration"] == {
        "IdleRuntimeSessionTimeout": IDLE_SESSION_TIMEOUT_S,
        "MaxLifetime": MAX_SESSION_LIFETIME_S,
    }
    assert 60 <= IDLE_SESSION_TIMEOUT_S <= MAX_SESSION_LIFETIME_S <= 28800, "AgentCore's range for microVMs"


def test_runtime_role_touches_only_the_history_prefix(relay_app: SynthesizedApp) -> None:
    logical_id, _ = _history_bucket(relay_app)
    template = relay_app.template("Agent")
    s3_statements = [s for s in statements(template) if any(a.startswith("s3:") for a in as_list(s["Action"]))]
    by_actions = {tuple(sorted(as_list(s["Action"]))): s for s in s3_statements}
    assert set(by_actions) == {("s3:DeleteObject", "s3:GetObject", "s3:PutObject"), ("s3:ListBucket",)}
    objects = by_actions[("s3:DeleteObject", "s3:GetObject", "s3:PutObject")]
    assert objects["Resource"] == {"Fn::Join": ["", [{"Fn::GetAtt": [logical_id, "Arn"]}, f"/{HISTORY_PREFIX}*"]]}
    listing = by_actions[("s3:ListBucket",)]
    assert listing["Resource"] == {"Fn::GetAtt": [logical_id, "Arn"]}
    assert list(listing["Condition"]) == ["StringLike"]
    assert as_list(listing["Condition"]["StringLike"]["s3:prefix"]) == [f"{HISTORY_PREFIX}*"]
