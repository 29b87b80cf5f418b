"""Check: whose credentials these are (sts:GetCallerIdentity), and that a region is configured."""

from __future__ import annotations

from typing import Any

from relay_infra.preflight.aws_errors import AwsError, describe
from relay_infra.preflight.result import CheckResult, Status

NAME = "credentials"
CREDENTIALS_FIX = (
    "configure credentials for the target account (aws configure, aws sso login, or AWS_PROFILE / "
    "AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY), then run make preflight again"
)
REGION_FIX = "set a region: export AWS_REGION=us-east-1, aws configure set region us-east-1, or --region"


def check_credentials(sts: Any, region: str | None) -> tuple[CheckResult, str | None]:
    """Pass when sts:GetCallerIdentity answers and ``region`` is set; the line names the account, the caller's
    ARN and the region every other check (and the deploy) uses. Also returns the account id (None when the
    credentials do not work), which other checks' fixes name."""
    try:
        identity = sts.get_caller_identity()
    except AwsError as error:
        return CheckResult(NAME, Status.FAIL, describe(error), CREDENTIALS_FIX), None
    account = str(identity["Account"])
    who = f"account {account} as {identity['Arn']}"
    if not region:
        return CheckResult(NAME, Status.FAIL, f"{who}, but no region is configured", REGION_FIX), account
    return CheckResult(NAME, Status.PASS, f"{who}, region {region}"), account
