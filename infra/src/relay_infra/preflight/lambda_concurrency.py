"""Check: the account's Lambda concurrency leaves room for the relay's reserved concurrency.

Lambda refuses a reservation that would leave fewer than 100 unreserved concurrent executions in the account and
region, and a new account's quota may be far below the default 1,000. ``GetAccountSettings`` gives the quota
(``ConcurrentExecutions``) and what is not reserved yet (``UnreservedConcurrentExecutions``). A quota that cannot
hold the reservation fails; one whose unreserved part is short warns, since on a redeploy that part already
excludes this deployment's own reservation.
"""

from __future__ import annotations

from typing import Any, Final

from relay_infra.preflight.aws_errors import AwsError, describe, is_access_denied
from relay_infra.preflight.result import CheckResult, Status

NAME: Final = "lambda-concurrency"
MIN_UNRESERVED: Final = 100
"""Lambda keeps at least this many concurrent executions unreserved per account and region."""


def _fix(needed: int, region: str | None) -> str:
    return (
        f"request a Lambda 'Concurrent executions' quota of at least {needed} in {region or 'the region'} (Service "
        "Quotas console, or aws service-quotas request-service-quota-increase --service-code lambda --quota-code "
        "L-B99A9384 --desired-value N), or deploy with a smaller -c relay:relayReservedConcurrency=N"
    )


def check_lambda_concurrency(lambda_client: Any, *, reserved: int, region: str | None) -> CheckResult:
    """Pass when ``reserved`` more reserved executions leave Lambda's minimum unreserved."""
    try:
        limits = lambda_client.get_account_settings()["AccountLimit"]
    except AwsError as error:
        fix = "allow lambda:GetAccountSettings" if is_access_denied(error) else _fix(reserved + MIN_UNRESERVED, region)
        return CheckResult(NAME, Status.FAIL, f"cannot read the Lambda account settings: {describe(error)}", fix)
    quota = int(limits.get("ConcurrentExecutions", 0))
    unreserved = int(limits.get("UnreservedConcurrentExecutions", quota))
    found = f"relay reserves {reserved}; account quota {quota}, {unreserved} unreserved (Lambda keeps {MIN_UNRESERVED})"
    if quota - MIN_UNRESERVED < reserved:
        return CheckResult(NAME, Status.FAIL, found, _fix(reserved + MIN_UNRESERVED, region))
    if unreserved - MIN_UNRESERVED < reserved:
        return CheckResult(
            NAME,
            Status.WARN,
            f"{found}: short unless part of it is this deployment's own reservation (a redeploy)",
            _fix(quota + reserved, region),
        )
    return CheckResult(NAME, Status.PASS, found)


__all__ = ["MIN_UNRESERVED", "NAME", "check_lambda_concurrency"]
