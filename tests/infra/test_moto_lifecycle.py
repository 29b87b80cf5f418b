"""The real deploy → destroy → deploy sequence, in moto's CloudFormation, for the stack that holds retained data.

moto's CloudFormation creates the SpeechData stack (its S3 buckets; it skips AWS::S3::BucketPolicy) and honours
DeletionPolicy Retain, so the redeploy after a destroy runs for real here. The other stacks it cannot run faithfully
(docs/deploy.md lists what it skips): their lifecycle is checked from the templates (test_deploy_lifecycle.py).
"""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

if TYPE_CHECKING:
    from tests.infra.conftest import SynthesizedApp

STACK = "KokoroRelay-dev-SpeechData"


def _body(template: dict[str, Any]) -> str:
    """The template as CloudFormation gets it, less CDK's bootstrap-version rule (no bootstrap in moto)."""
    template = copy.deepcopy(template)
    template.pop("Rules", None)
    template.get("Parameters", {}).pop("BootstrapVersion", None)
    return json.dumps(template)


def _deploy(cloudformation: Any, body: str) -> dict[str, str]:
    cloudformation.create_stack(StackName=STACK, TemplateBody=body)
    stack = cloudformation.describe_stacks(StackName=STACK)["Stacks"][0]
    assert stack["StackStatus"] == "CREATE_COMPLETE", stack.get("StackStatusReason")
    return {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}


@pytest.mark.filterwarnings("ignore:Tried to parse AWS.S3.BucketPolicy")
def test_deploy_destroy_deploy_keeps_the_weights_and_starts_afresh(relay_app: SynthesizedApp) -> None:
    body = _body(relay_app.template("SpeechData"))
    with mock_aws():
        cloudformation = boto3.client("cloudformation", region_name="us-east-1")
        s3 = boto3.client("s3", region_name="us-east-1")
        first = _deploy(cloudformation, body)
        s3.put_object(Bucket=first["WeightsBucketName"], Key="kokoro-82m/config.json", Body=b"{}")
        cloudformation.delete_stack(StackName=STACK)  # make destroy
        kept = s3.list_objects_v2(Bucket=first["WeightsBucketName"])["KeyCount"]
        second = _deploy(cloudformation, body)  # make deploy again
    assert kept == 1  # retained: the weights outlive the stack
    assert second["WeightsBucketName"] != first["WeightsBucketName"]


@pytest.mark.filterwarnings("ignore:Tried to parse AWS.S3.BucketPolicy")
def test_a_retained_bucket_with_a_fixed_name_blocks_the_redeploy(relay_app: SynthesizedApp) -> None:
    """The defect's shape, run the same way: the sequence above fails once the bucket has a fixed name."""
    template = copy.deepcopy(relay_app.template("SpeechData"))
    weights = next(r for r in template["Resources"].values() if r["Type"] == "AWS::S3::Bucket" and "Logging" in str(r))
    weights["Properties"]["BucketName"] = "kokoro-relay-dev-weights-123456789012-us-east-1"
    body = _body(template)
    with mock_aws():
        cloudformation = boto3.client("cloudformation", region_name="us-east-1")
        _deploy(cloudformation, body)
        cloudformation.delete_stack(StackName=STACK)
        try:
            cloudformation.create_stack(StackName=STACK, TemplateBody=body)
            status = cloudformation.describe_stacks(StackName=STACK)["Stacks"][0]["StackStatus"]
        except ClientError as exc:
            status = exc.response["Error"]["Code"]
    assert status != "CREATE_COMPLETE"
