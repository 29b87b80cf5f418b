"""Ops stack: every workflow from statemachines/ fully substituted, its task functions, grants and schedules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from aws_cdk.assertions import Match
from tests.infra.iam_statements import actions_of, as_list, rendered, statements, statements_of_handler

from relay_core.agent.conversation_ids import gateway_history_prefix
from relay_functions import ops
from relay_functions.ops import placeholders
from relay_infra.paths import STATEMACHINES_DIR
from relay_infra.state_machine_definitions import SdkCall, sdk_calls

if TYPE_CHECKING:
    from tests.infra.conftest import SynthesizedApp

WORKFLOWS = [name for name, file in placeholders.STATE_MACHINES.items() if (STATEMACHINES_DIR / file).is_file()]


def _definition(machine: dict[str, Any]) -> str:
    """The definition CloudFormation will create: DefinitionString with DefinitionSubstitutions applied."""
    definition = machine["Properties"]["DefinitionString"]
    text = definition if isinstance(definition, str) else json.dumps(definition)
    for name, value in machine["Properties"].get("DefinitionSubstitutions", {}).items():
        text = text.replace("${" + name + "}", value if isinstance(value, str) else "<" + rendered(value) + ">")
    return text


def test_every_definition_is_deployed_with_every_placeholder_substituted(relay_app: SynthesizedApp) -> None:
    machines = relay_app.resources("Ops", "AWS::StepFunctions::StateMachine")
    assert len(machines) == len(WORKFLOWS) >= 2
    for machine in machines:
        text = _definition(machine)
        assert not placeholders.PLACEHOLDER_PATTERN.search(text), placeholders.placeholders_in(text)
        assert machine["Properties"]["TracingConfiguration"] == {"Enabled": True}
        assert machine["Properties"]["LoggingConfiguration"]["Level"] == "ALL"


@pytest.mark.parametrize("workflow", WORKFLOWS)
def test_substitutions_cover_exactly_the_placeholders_used(relay_app: SynthesizedApp, workflow: str) -> None:
    used = placeholders.placeholders_in(placeholders.definition_path(workflow).read_text())
    comments = [
        m
        for m in relay_app.resources("Ops", "AWS::StepFunctions::StateMachine")
        if f"statemachines/{placeholders.STATE_MACHINES[workflow]}" in rendered(m["Properties"]["DefinitionString"])
        or set(m["Properties"].get("DefinitionSubstitutions", {})) == used
    ]
    assert comments
    assert set(comments[0]["Properties"]["DefinitionSubstitutions"]) == used
    timing = {
        k: v
        for k, v in comments[0]["Properties"]["DefinitionSubstitutions"].items()
        if k in placeholders.PRODUCTION_TIMING
    }
    assert timing == {k: placeholders.PRODUCTION_TIMING[k] for k in timing}


def test_one_arm64_function_per_task_handler(relay_app: SynthesizedApp) -> None:
    handlers = {
        f["Properties"]["Handler"]: f["Properties"]
        for f in relay_app.resources("Ops", "AWS::Lambda::Function")
        if f["Properties"]["Handler"].startswith("relay_functions.")
    }
    assert set(handlers) == set(placeholders.FUNCTION_HANDLERS.values())
    for props in handlers.values():
        assert (props["Runtime"], props["Architectures"]) == ("python3.12", ["arm64"])


def test_state_machines_get_exactly_their_sdk_integrations(relay_app: SynthesizedApp) -> None:
    for machine in relay_app.resources("Ops", "AWS::StepFunctions::StateMachine"):
        role_id = machine["Properties"]["RoleArn"]["Fn::GetAtt"][0]
        granted = {
            action
            for policy in relay_app.resources("Ops", "AWS::IAM::Policy")
            if {"Ref": role_id} in policy["Properties"]["Roles"]
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]
            for action in as_list(statement["Action"])
        }
        raw = machine["Properties"]["DefinitionString"]
        assert isinstance(raw, str)  # placeholders sit inside JSON strings: the raw definition is valid JSON
        for call in sdk_calls(raw):
            assert call.iam_action in granted


def test_sdk_call_names_map_to_iam_actions() -> None:
    assert SdkCall("sagemaker", "deleteEndpoint").iam_action == "sagemaker:DeleteEndpoint"
    assert SdkCall("s3", "putObject").iam_action == "s3:PutObject"
    assert sdk_calls(
        json.dumps({"States": {"A": {"Type": "Task", "Resource": "arn:aws:states:::aws-sdk:ecr:deleteRepository"}}})
    ) == {SdkCall("ecr", "deleteRepository")}


def test_daily_audit_schedule_and_post_deployment_smoke_test(relay_app: SynthesizedApp) -> None:
    template = relay_app.assertions("Ops")
    if "dependency_audit" in WORKFLOWS:
        template.has_resource_properties(
            "AWS::Scheduler::Schedule",
            {
                "ScheduleExpression": "cron(0 6 * * ? *)",
                "State": "ENABLED",
                "Target": Match.object_like({"Arn": Match.any_value()}),
            },
        )
    if "smoke_test" in WORKFLOWS:
        (trigger,) = relay_app.resources("Ops", "Custom::AWS")
        assert '\\"action\\":\\"startExecution\\"' in rendered(trigger["Properties"]["Create"])
        assert rendered(trigger["Properties"]["Create"]) == rendered(trigger["Properties"]["Update"])


def test_reports_bucket_is_private_and_versioned(relay_app: SynthesizedApp) -> None:
    relay_app.assertions("Ops").has_resource_properties(
        "AWS::S3::Bucket",
        {
            "VersioningConfiguration": {"Status": "Enabled"},
            "PublicAccessBlockConfiguration": Match.object_like({"BlockPublicAcls": True}),
        },
    )


def test_s3_writes_are_granted_per_call_on_the_reports_objects_only(relay_app: SynthesizedApp) -> None:
    s3_statements = [
        statement
        for machine in relay_app.resources("Ops", "AWS::StepFunctions::StateMachine")
        for policy in relay_app.resources("Ops", "AWS::IAM::Policy")
        if {"Ref": machine["Properties"]["RoleArn"]["Fn::GetAtt"][0]} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if any(action.startswith("s3:") for action in as_list(statement["Action"]))
    ]
    assert s3_statements
    for statement in s3_statements:
        assert as_list(statement["Action"]) == ["s3:PutObject"]
        (resource,) = as_list(statement["Resource"])
        assert "Reports" in json.dumps(resource)
        assert "Weights" not in json.dumps(resource)


def test_workflow_logs_are_vended_log_groups_named_per_environment(relay_app: SynthesizedApp) -> None:
    names = sorted(
        group["Properties"]["LogGroupName"]
        for group in relay_app.resources("Ops", "AWS::Logs::LogGroup")
        if "LogGroupName" in group["Properties"]
    )
    assert names == [f"/aws/vendedlogs/states/kokoro-relay-dev-{w.replace('_', '-')}" for w in sorted(WORKFLOWS)]


def test_smoke_kokoro_is_granted_every_sagemaker_runtime_call_the_smoke_test_makes(relay_app: SynthesizedApp) -> None:
    """Each ``boto3.client("sagemaker-runtime").<call>(`` of the smoke modules is an IAM action on the endpoint
    (the Service Authorization Reference lists InvokeEndpointWithResponseStream as its own action; the API
    reference asks for InvokeEndpoint: both are granted)."""
    import re  # noqa: PLC0415

    sources = "".join((Path(ops.__file__).parent / f"{name}.py").read_text() for name in ("smoke_aws", "smoke_kokoro"))
    calls = set(re.findall(r'client\("sagemaker-runtime"\)\.(\w+)\(', sources))
    assert calls == {"invoke_endpoint_with_response_stream"}
    granted = actions_of(statements_of_handler(relay_app.template("Ops"), "relay_functions.ops.smoke_kokoro.handler"))
    for call in calls:
        assert "sagemaker:" + "".join(part.title() for part in call.split("_")) in granted
    assert {"sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointWithBidirectionalStream"} <= granted


def test_cleanup_gets_no_delete_permission_on_the_cdk_bootstrap_image_repository(relay_app: SynthesizedApp) -> None:
    """The default app builds its images as CDK assets, so they live in the bootstrap's shared repository
    (``cdk-hnb659fds-container-assets-...``): the cleanup's repository task may not delete it, nor any image in it."""
    substitutions = [
        m["Properties"]["DefinitionSubstitutions"]
        for m in relay_app.resources("Ops", "AWS::StepFunctions::StateMachine")
        if "EcrRepositoryName" in m["Properties"].get("DefinitionSubstitutions", {})
    ]
    assert substitutions
    assert "cdk-hnb659fds-container-assets-" in rendered(substitutions[0]["EcrRepositoryName"])
    template = relay_app.template("Ops")
    granted = actions_of(statements_of_handler(template, "relay_functions.ops.cleanup_repository.handler"))
    assert not {"ecr:DeleteRepository", "ecr:BatchDeleteImage"} & granted
    everywhere = {a for s in statements(template) for a in as_list(s["Action"])}
    assert not {"ecr:DeleteRepository", "ecr:BatchDeleteImage"} & everywhere


def test_the_audit_scans_both_images_each_in_its_repository(relay_app: SynthesizedApp) -> None:
    """AUDIT_ECR_IMAGES names the Kokoro image the model runs and the agent image the runtime runs (by their
    asset tags), and the audit may read the scan findings of each one's repository."""
    import re  # noqa: PLC0415

    (audit,) = [
        f["Properties"]
        for f in relay_app.resources("Ops", "AWS::Lambda::Function")
        if f["Properties"].get("Handler") == "relay_functions.ops.audit_scan.handler"
    ]
    images = rendered(audit["Environment"]["Variables"]["AUDIT_ECR_IMAGES"])
    (runtime,) = relay_app.resources("Agent", "AWS::BedrockAgentCore::Runtime")
    (model,) = relay_app.resources("Speech", "AWS::SageMaker::Model")
    for running in (runtime["Properties"], model["Properties"]):
        tags = set(re.findall(r":([0-9a-f]{64})", rendered(running)))
        assert len(tags) == 1, rendered(running)
        assert f":{tags.pop()}" in images
    granted = statements_of_handler(relay_app.template("Ops"), "relay_functions.ops.audit_scan.handler")
    assert "ecr:DescribeImageScanFindings" in actions_of(granted)


def test_erase_user_may_touch_only_the_gateways_conversations_and_the_two_tables(relay_app: SynthesizedApp) -> None:
    """The erase-user task lists and deletes history only under the prefix of the conversation ids the gateway
    makes (no other object of the bucket, no bucket deletion, no read of a conversation), and scans and deletes
    items only in the gateway's two tables."""
    granted = [
        statement
        for statement in statements_of_handler(relay_app.template("Ops"), "relay_functions.ops.erase_user_data.handler")
        if not {a.split(":")[0] for a in as_list(statement["Action"])} <= {"logs", "xray"}
    ]
    by_action = {rendered(sorted(as_list(s["Action"]))): s for s in granted}
    assert set(by_action) == {
        rendered(["s3:ListBucket"]),
        rendered(["s3:DeleteObject"]),
        rendered(["dynamodb:DeleteItem", "dynamodb:Scan"]),
    }
    conversations = f"{gateway_history_prefix()}*"
    assert conversations == "conversations/session_kokoro-relay-conversation-*"
    listing = by_action[rendered(["s3:ListBucket"])]
    assert listing["Condition"] == {"StringLike": {"s3:prefix": [conversations]}}
    assert rendered(listing["Resource"]) == rendered({"Fn::ImportValue": "KokoroRelay-dev-Agent-HistoryBucketArn"})
    deleting = by_action[rendered(["s3:DeleteObject"])]
    assert deleting["Resource"] == {
        "Fn::Join": ["", [{"Fn::ImportValue": "KokoroRelay-dev-Agent-HistoryBucketArn"}, f"/{conversations}"]]
    }
    tables = as_list(by_action[rendered(["dynamodb:DeleteItem", "dynamodb:Scan"])]["Resource"])
    assert len(tables) == 2 and all("Fn::ImportValue" in t for t in tables), tables
    assert {"Connections", "Turns"} == {
        part for t in tables for part in ("Connections", "Turns") if part in t["Fn::ImportValue"]
    }
    (machine,) = [
        m
        for m in relay_app.resources("Ops", "AWS::StepFunctions::StateMachine")
        if "EraseUserDataFunctionArn" in m["Properties"].get("DefinitionSubstitutions", {})
    ]
    substitutions = machine["Properties"]["DefinitionSubstitutions"]
    assert {"HistoryBucketName", "ConnectionsTableName", "TurnsTableName"} <= set(substitutions)
