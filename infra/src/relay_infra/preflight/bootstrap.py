"""Check: the account and region are CDK-bootstrapped, with a bootstrap version the app's assets accept.

The version lives in the SSM parameter ``/cdk-bootstrap/<qualifier>/version`` (what every synthesized stack's
``BootstrapVersion`` parameter reads) and in the ``CDKToolkit`` stack's ``BootstrapVersion`` output; the SSM
parameter is read first, the stack when the parameter cannot be read.
"""

from __future__ import annotations

from typing import Any

from relay_infra.preflight.aws_errors import AwsError, describe, error_code
from relay_infra.preflight.result import CheckResult, Status

NAME = "cdk-bootstrap"
QUALIFIER = "hnb659fds"
"""The default synthesizer's qualifier, which the app uses."""
TOOLKIT_STACK = "CDKToolkit"
MIN_BOOTSTRAP_VERSION = 6
"""What the installed aws-cdk-lib's default synthesizer requires of the bootstrap stack
(``requiresBootstrapStackVersion`` in the cloud assembly; tests/infra/preflight/test_preflight_bootstrap.py reads
it from the synthesized app, so an aws-cdk-lib upgrade that changes it fails the suite)."""


def version_parameter(qualifier: str = QUALIFIER) -> str:
    """``/cdk-bootstrap/hnb659fds/version``."""
    return f"/cdk-bootstrap/{qualifier}/version"


def bootstrap_fix(account: str | None, region: str | None) -> str:
    """The command that bootstraps (or upgrades the bootstrap of) the target."""
    target = f"aws://{account or '<account>'}/{region or '<region>'}"
    return f"cd infra && npx cdk bootstrap {target} (the CDK CLI pinned in infra/package-lock.json)"


def check_bootstrap(
    ssm: Any,
    cloudformation: Any,
    *,
    account: str | None,
    region: str | None,
    required: int = MIN_BOOTSTRAP_VERSION,
    qualifier: str = QUALIFIER,
) -> CheckResult:
    """Pass when the bootstrap version (SSM parameter, else the CDKToolkit stack's output) is >= ``required``."""
    fix = bootstrap_fix(account, region)
    parameter = version_parameter(qualifier)
    try:
        value = ssm.get_parameter(Name=parameter)["Parameter"]["Value"]
        source = f"SSM {parameter}"
    except AwsError as error:
        if error_code(error) == "ParameterNotFound":
            return CheckResult(NAME, Status.FAIL, f"not bootstrapped: no SSM parameter {parameter}", fix)
        ssm_error = describe(error)
        try:
            value, source = _stack_version(cloudformation)
        except LookupError as missing:
            return CheckResult(NAME, Status.FAIL, f"not bootstrapped: {missing} (SSM: {ssm_error})", fix)
        except AwsError as stack_error:
            return CheckResult(
                NAME,
                Status.FAIL,
                f"cannot read the bootstrap version: SSM {ssm_error}; CloudFormation {describe(stack_error)}",
                f"allow ssm:GetParameter on {parameter} or cloudformation:DescribeStacks on {TOOLKIT_STACK}; "
                f"if the target is not bootstrapped: {fix}",
            )
    try:
        version = int(value)
    except ValueError:
        return CheckResult(NAME, Status.FAIL, f"bootstrap version {value!r} ({source}) is not a number", fix)
    if version < required:
        return CheckResult(
            NAME, Status.FAIL, f"bootstrap version {version} ({source}), the app needs >= {required}", fix
        )
    return CheckResult(NAME, Status.PASS, f"bootstrap version {version} ({source}), the app needs >= {required}")


def _stack_version(cloudformation: Any) -> tuple[str, str]:
    try:
        stacks = cloudformation.describe_stacks(StackName=TOOLKIT_STACK)["Stacks"]
    except AwsError as error:
        if error_code(error) == "ValidationError" and "does not exist" in describe(error):
            raise LookupError(f"no {TOOLKIT_STACK} stack") from error
        raise
    stack = stacks[0]
    status = str(stack.get("StackStatus", ""))
    if status.endswith("_FAILED") or status.startswith(("ROLLBACK", "DELETE")):
        raise LookupError(f"the {TOOLKIT_STACK} stack is {status}")
    for output in stack.get("Outputs", []):
        if output.get("OutputKey") == "BootstrapVersion":
            return str(output["OutputValue"]), f"stack {TOOLKIT_STACK}"
    raise LookupError(f"the {TOOLKIT_STACK} stack has no BootstrapVersion output")
