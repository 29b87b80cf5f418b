"""The CDK bootstrap check: SSM version parameter first, the CDKToolkit stack when SSM cannot be read."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.infra.preflight.stubs import ACCOUNT, REGION, Stubbed

from relay_infra.preflight.bootstrap import MIN_BOOTSTRAP_VERSION, check_bootstrap, version_parameter
from relay_infra.preflight.result import Status

PARAMETER = "/cdk-bootstrap/hnb659fds/version"


def _parameter(value: str) -> dict[str, Any]:
    return {"Parameter": {"Name": PARAMETER, "Type": "String", "Value": value, "Version": 1}}


def _toolkit(status: str = "CREATE_COMPLETE", version: str | None = "28") -> dict[str, Any]:
    stack: dict[str, Any] = {
        "StackName": "CDKToolkit",
        "CreationTime": datetime(2026, 1, 1, tzinfo=UTC),
        "StackStatus": status,
    }
    if version is not None:
        stack["Outputs"] = [{"OutputKey": "BootstrapVersion", "OutputValue": version}]
    return {"Stacks": [stack]}


def _check(ssm: Any, cloudformation: Any) -> Any:
    return check_bootstrap(ssm, cloudformation, account=ACCOUNT, region=REGION)


def test_the_parameter_name_is_the_default_qualifiers() -> None:
    assert version_parameter() == PARAMETER


def test_passes_on_a_recent_bootstrap(stubbed: Stubbed) -> None:
    (ssm, ssm_stub), (cfn, _) = stubbed("ssm"), stubbed("cloudformation")
    ssm_stub.add_response("get_parameter", _parameter("28"), {"Name": PARAMETER})
    result = _check(ssm, cfn)
    assert result.status is Status.PASS
    assert result.found == f"bootstrap version 28 (SSM {PARAMETER}), the app needs >= {MIN_BOOTSTRAP_VERSION}"


def test_fails_on_an_old_bootstrap_with_the_command_that_upgrades_it(stubbed: Stubbed) -> None:
    (ssm, ssm_stub), (cfn, _) = stubbed("ssm"), stubbed("cloudformation")
    ssm_stub.add_response("get_parameter", _parameter("5"), {"Name": PARAMETER})
    result = _check(ssm, cfn)
    assert result.status is Status.FAIL
    assert "bootstrap version 5" in result.found
    assert result.fix.startswith(f"cd infra && npx cdk bootstrap aws://{ACCOUNT}/{REGION}")


def test_fails_when_not_bootstrapped(stubbed: Stubbed) -> None:
    (ssm, ssm_stub), (cfn, _) = stubbed("ssm"), stubbed("cloudformation")
    ssm_stub.add_client_error("get_parameter", "ParameterNotFound", "", expected_params={"Name": PARAMETER})
    result = _check(ssm, cfn)
    assert result.status is Status.FAIL
    assert result.found == f"not bootstrapped: no SSM parameter {PARAMETER}"
    assert "cdk bootstrap" in result.fix


def test_reads_the_toolkit_stack_when_ssm_is_denied(stubbed: Stubbed) -> None:
    (ssm, ssm_stub), (cfn, cfn_stub) = stubbed("ssm"), stubbed("cloudformation")
    ssm_stub.add_client_error("get_parameter", "AccessDeniedException", "not allowed")
    cfn_stub.add_response("describe_stacks", _toolkit(), {"StackName": "CDKToolkit"})
    result = _check(ssm, cfn)
    assert result.status is Status.PASS
    assert "bootstrap version 28 (stack CDKToolkit)" in result.found


def test_fails_on_a_missing_or_broken_toolkit_stack(stubbed: Stubbed) -> None:
    (ssm, ssm_stub), (cfn, cfn_stub) = stubbed("ssm"), stubbed("cloudformation")
    ssm_stub.add_client_error("get_parameter", "AccessDeniedException", "not allowed")
    cfn_stub.add_client_error("describe_stacks", "ValidationError", "Stack with id CDKToolkit does not exist")
    ssm_stub.add_client_error("get_parameter", "AccessDeniedException", "not allowed")
    cfn_stub.add_response("describe_stacks", _toolkit(status="ROLLBACK_COMPLETE"))
    missing, broken = _check(ssm, cfn), _check(ssm, cfn)
    assert missing.status is Status.FAIL
    assert missing.found.startswith("not bootstrapped: no CDKToolkit stack")
    assert broken.status is Status.FAIL
    assert "ROLLBACK_COMPLETE" in broken.found


def test_fails_with_the_permissions_to_grant_when_both_are_denied(stubbed: Stubbed) -> None:
    (ssm, ssm_stub), (cfn, cfn_stub) = stubbed("ssm"), stubbed("cloudformation")
    ssm_stub.add_client_error("get_parameter", "AccessDeniedException", "not allowed")
    cfn_stub.add_client_error("describe_stacks", "AccessDenied", "not allowed either")
    result = _check(ssm, cfn)
    assert result.status is Status.FAIL
    assert "cannot read the bootstrap version" in result.found
    assert "ssm:GetParameter" in result.fix
    assert "cloudformation:DescribeStacks" in result.fix


def test_the_required_version_is_what_the_synthesized_app_requires(relay_app: Any) -> None:
    """aws-cdk-lib writes each stack's and asset manifest's minimum into the cloud assembly; the check's
    MIN_BOOTSTRAP_VERSION must be at least the highest of them (an aws-cdk-lib upgrade that raises it fails here)."""
    manifest = json.loads((Path(relay_app.outdir) / "manifest.json").read_text(encoding="utf-8"))
    required = [
        int(artifact["properties"]["requiresBootstrapStackVersion"])
        for artifact in manifest["artifacts"].values()
        if "requiresBootstrapStackVersion" in artifact.get("properties", {})
    ]
    assert required
    assert max(required) == MIN_BOOTSTRAP_VERSION
