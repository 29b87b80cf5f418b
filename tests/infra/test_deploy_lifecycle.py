"""Issue 18's guardrails: what CloudFormation would do across deploy → update with a new image and new function
code → destroy → deploy, checked on the real synthesized app (tests/infra/cfn_lifecycle.py reads the templates with
AWS's resource schemas), plus the checker itself on the shapes of the defects it must catch."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from aws_cdk import aws_lambda as lambda_
from tests.infra.cfn_lifecycle import (
    changed_imported_exports,
    replaced_resources,
    replaced_with_the_same_name,
    retained_with_a_fixed_name,
)
from tests.infra.conftest import synthesize

from relay_infra.config import LambdaBundling, RelayConfig

if TYPE_CHECKING:
    from tests.infra.conftest import SynthesizedApp

TTS_IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/kokoro-tts@sha256:{}"
AGENT_IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/kokoro-agent@sha256:{}"
IDENTITY_TYPES = {
    "AWS::SageMaker::Endpoint": "the endpoint name the agent and ops address",
    "AWS::ApiGatewayV2::Api": "the WebSocket URL clients connect to",
    "AWS::ApiGatewayV2::Stage": "the WebSocket URL clients connect to",
    "AWS::DynamoDB::Table": "connections, turns and conversations",
    "AWS::Cognito::UserPool": "the users",
    "AWS::S3::Bucket": "weights, reports and logs",
    "AWS::BedrockAgentCore::Runtime": "the runtime ARN the gateway invokes",
}


def _deployment(tmp: Path, digest: str, code_marker: str) -> dict[str, dict[str, Any]]:
    """The app deployed from pushed images with ``digest`` and functions code that differs by ``code_marker``."""
    code_dir = tmp / f"code-{code_marker}"
    code_dir.mkdir()
    (code_dir / "handler.py").write_text(f"VERSION = {code_marker!r}\n")
    config = RelayConfig(
        lambda_bundling=LambdaBundling.SOURCES,
        tts_image_uri=TTS_IMAGE.format(digest * 64),
        agent_image_uri=AGENT_IMAGE.format(digest * 64),
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("relay_infra.app.functions_code", lambda *_: lambda_.Code.from_asset(str(code_dir)))
        return synthesize(config, tmp / f"cdk.out-{digest}")


@pytest.fixture(scope="module")
def update(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    """(before, after): the second deploy brings a new Kokoro image, a new agent image and new function code."""
    tmp = tmp_path_factory.mktemp("lifecycle")
    return _deployment(tmp, "a", "one"), _deployment(tmp, "b", "two")


def test_a_new_image_changes_no_export_another_stack_imports(update: tuple[Any, Any]) -> None:
    before, after = update
    assert changed_imported_exports(before, after) == {}


def test_a_new_image_replaces_the_model_and_config_under_new_names(update: tuple[Any, Any]) -> None:
    before, after = update
    replaced = replaced_resources(before, after)
    types = {after[stack]["Resources"][logical_id]["Type"] for stack, logical_id in replaced}
    # not vacuous: the image change really replaces what it must, and each replacement gets a name of its own
    assert {"AWS::SageMaker::Model", "AWS::SageMaker::EndpointConfig"} <= types
    assert replaced_with_the_same_name(before, after) == []


def test_an_update_replaces_nothing_whose_identity_clients_rely_on(update: tuple[Any, Any]) -> None:
    before, after = update
    kept = [
        f"{stack}/{logical_id}: {IDENTITY_TYPES[after[stack]['Resources'][logical_id]['Type']]}"
        for stack, logical_id in replaced_resources(before, after)
        if after[stack]["Resources"][logical_id]["Type"] in IDENTITY_TYPES
    ]
    assert kept == []


def test_destroy_then_deploy_meets_no_retained_resource_with_a_fixed_name(relay_app: SynthesizedApp) -> None:
    templates = {part: relay_app.template(part) for part in ("SpeechData", "Speech", "Agent", "Gateway", "Ops")}
    retained = [
        logical_id
        for template in templates.values()
        for logical_id, r in template["Resources"].items()
        if r.get("DeletionPolicy") == "Retain"
    ]
    assert len(retained) >= 4  # weights, access logs, reports, user pool, the account-level logging role
    assert retained_with_a_fixed_name(templates) == []


# ---- the checker on the shapes of the defects it guards against (each would have passed silently otherwise) ----


def _model_stacks(image: str, *, export_name: bool, model_name: str | None) -> dict[str, dict[str, Any]]:
    model: dict[str, Any] = {"Type": "AWS::SageMaker::Model", "Properties": {"PrimaryContainer": {"Image": image}}}
    if model_name:
        model["Properties"]["ModelName"] = model_name
    speech: dict[str, Any] = {"Resources": {"Model": model}, "Outputs": {}}
    if export_name:
        speech["Outputs"]["ModelName"] = {
            "Value": {"Fn::GetAtt": ["Model", "ModelName"]},
            "Export": {"Name": "Speech:ModelName"},
        }
    variable: dict[str, Any] = {"Fn::ImportValue": "Speech:ModelName"} if export_name else {}
    function = {"Type": "AWS::Lambda::Function", "Properties": {"Environment": {"Variables": {"M": variable}}}}
    ops: dict[str, Any] = {"Resources": {"Fn": function}}
    return {"Speech": speech, "Ops": ops}


def test_the_checker_catches_an_imported_export_of_a_replaced_model() -> None:
    before = _model_stacks("image:1", export_name=True, model_name=None)
    after = _model_stacks("image:2", export_name=True, model_name=None)
    assert ("Speech", "Model") in replaced_resources(before, after)
    assert "Speech:ModelName" in changed_imported_exports(before, after)


def test_the_checker_catches_a_replacement_that_keeps_its_fixed_name() -> None:
    before = _model_stacks("image:1", export_name=False, model_name="kokoro-tts")
    after = _model_stacks("image:2", export_name=False, model_name="kokoro-tts")
    assert replaced_with_the_same_name(before, after) == [
        'Speech/Model (AWS::SageMaker::Model) keeps {"ModelName": "kokoro-tts"}'
    ]
    renamed = _model_stacks("image:2", export_name=False, model_name="kokoro-tts-2")
    assert replaced_with_the_same_name(before, renamed) == []


def test_the_checker_catches_a_retained_bucket_with_a_fixed_name() -> None:
    bucket = {"Type": "AWS::S3::Bucket", "DeletionPolicy": "Retain", "Properties": {"BucketName": "weights"}}
    assert retained_with_a_fixed_name({"Data": {"Resources": {"Bucket": bucket}}}) == [
        'Data/Bucket (AWS::S3::Bucket) retained as {"BucketName": "weights"}'
    ]
    generated = {**bucket, "Properties": {}}
    assert retained_with_a_fixed_name({"Data": {"Resources": {"Bucket": generated}}}) == []
