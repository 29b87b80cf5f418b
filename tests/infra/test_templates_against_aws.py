"""The synthesized templates against AWS's own rules: cfn-lint (AWS's CloudFormation linter, with the registry's
resource schemas and the Service Authorization Reference's IAM actions), and IAM's case-sensitive SageMaker ARNs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.infra.iam_statements import as_list

if TYPE_CHECKING:
    from tests.infra.conftest import SynthesizedApp

IGNORED_RULES = {
    "E3601": "the States Language allows OutputPath on a Succeed state (statemachines/*.asl.json use it to shape "
    "the execution's output); cfn-lint's state-machine schema does not list it",
}
"""cfn-lint errors this project ignores, each with its reason (docs/deploy.md lists them too)."""
KNOWN_IAM_ACTIONS = {
    "sagemaker:InvokeEndpointWithBidirectionalStream": "the SageMaker Runtime HTTP/2 operation the agent and the "
    "smoke test call (aws-sdk-sagemaker-runtime-http2); newer than cfn-lint's copy of the Service Authorization "
    "Reference. Granted together with sagemaker:InvokeEndpoint on the same endpoint.",
}
"""IAM actions cfn-lint does not know (W3037) that are real; any other unknown action fails the suite (a typo in an
action is a permission that silently never applies)."""
REGIONS = ("us-east-1", "eu-west-1")
CFN_LINT = str(Path(sys.executable).with_name("cfn-lint"))


def _lint(paths: list[Path]) -> list[dict[str, Any]]:
    result = subprocess.run(
        [CFN_LINT, "--format", "json", "--regions", *REGIONS, "--", *map(str, paths)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.stdout.strip(), result.stderr
    return list(json.loads(result.stdout))


def test_cfn_lint_finds_no_error_in_any_template(relay_app: SynthesizedApp) -> None:
    paths = sorted(relay_app.outdir.glob("*.template.json"))
    assert len(paths) >= 6
    findings = _lint(paths)
    errors = [
        f"{Path(f['Filename']).name}: {f['Rule']['Id']} {f['Message']}"
        for f in findings
        if f["Level"] == "Error" and f["Rule"]["Id"] not in IGNORED_RULES
    ]
    assert errors == []
    unknown_actions = [
        f["Message"]
        for f in findings
        if f["Rule"]["Id"] == "W3037"
        and not any(action.split(":")[1].lower() in f["Message"] for action in KNOWN_IAM_ACTIONS)
    ]
    assert unknown_actions == []


def test_cfn_lint_is_live(tmp_path: Path) -> None:
    """The linter really runs here: a template with a misspelled property and an unknown IAM action fails."""
    template = {
        "Resources": {
            "Bucket": {"Type": "AWS::S3::Bucket", "Properties": {"BucketNam": "x"}},
            "Policy": {
                "Type": "AWS::IAM::ManagedPolicy",
                "Properties": {
                    "PolicyDocument": {
                        "Version": "2012-10-17",
                        "Statement": [{"Effect": "Allow", "Action": "sagemaker:InvokeEndpointTypo", "Resource": "*"}],
                    }
                },
            },
        }
    }
    path = tmp_path / "bad.template.json"
    path.write_text(json.dumps(template))
    rules = {f["Rule"]["Id"] for f in _lint([path])}
    assert "E3002" in rules
    assert "W3037" in rules


def render(value: Any) -> str:
    """An IAM resource expression as text: pseudo parameters as ``<lowercase>``, anything CloudFormation resolves
    at deploy time (``Ref``, ``GetAtt``, imports) as ``<UNRESOLVED:...>``, whose case nobody controls."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        if "Fn::Join" in value:
            separator, parts = value["Fn::Join"]
            return str(separator).join(render(part) for part in parts)
        ref = value.get("Ref")
        if isinstance(ref, str) and ref.startswith("AWS::"):
            return f"<{ref.removeprefix('AWS::').lower()}>"
        return f"<UNRESOLVED:{json.dumps(value, sort_keys=True)}>"
    return json.dumps(value)


def _policy_resources(template: dict[str, Any]) -> list[Any]:
    documents = []
    for resource in template["Resources"].values():
        properties = resource.get("Properties", {})
        if resource["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            documents.append(properties["PolicyDocument"])
        if resource["Type"] == "AWS::IAM::Role":
            documents += [policy["PolicyDocument"] for policy in properties.get("Policies", [])]
    return [res for doc in documents for statement in doc["Statement"] for res in as_list(statement.get("Resource"))]


def test_every_sagemaker_arn_in_every_policy_is_lowercase(relay_app: SynthesizedApp) -> None:
    """SageMaker ARNs are lowercase and IAM matches them case-sensitively: a statement built from a name that
    CloudFormation generated (mixed case, unknown at synth) would deny every call."""
    arns = [
        render(resource)
        for part in ("Speech", "Agent", "Gateway", "Observability", "Ops")
        for resource in _policy_resources(relay_app.template(part))
        if ":sagemaker:" in render(resource)
    ]
    assert len(arns) >= 4  # the agent's endpoint, the smoke test's, the cleanup's endpoint/config/model
    resource_parts = [arn.split(":", 5)[5] for arn in arns]
    assert [part for part in resource_parts if part != part.lower() or "UNRESOLVED" in part] == []
    assert all(part.startswith(("endpoint/", "endpoint-config/", "model/")) for part in resource_parts)


def test_render_keeps_what_cloudformation_decides_visible() -> None:
    getatt = {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":endpoint/", {"Fn::GetAtt": ["E", "Name"]}]]}
    assert "UNRESOLVED" in render(getatt)
    assert render({"Fn::Join": ["", ["arn:", {"Ref": "AWS::Region"}, ":endpoint/a"]]}) == "arn:<region>:endpoint/a"
