"""Check: CloudWatch Transaction Search is on in the account and region (AgentCore's spans and traces need it).

Transaction Search sends every span X-Ray ingests to CloudWatch Logs (``aws/spans``); AgentCore's observability
shows the voice agent's traces only once it is on, and it is set once per account and region, outside any stack.
X-Ray answers ``GetTraceSegmentDestination`` with ``Destination`` (``XRay`` or ``CloudWatchLogs``) and ``Status``
(``PENDING`` or ``ACTIVE``): on means ``CloudWatchLogs``; ``PENDING`` is on its way (a warning).
"""

from __future__ import annotations

from typing import Any, Final

from relay_infra.preflight.aws_errors import AwsError, describe, is_access_denied
from relay_infra.preflight.result import CheckResult, Status

NAME: Final = "transaction-search"
FIX: Final = (
    "turn on CloudWatch Transaction Search once for this account and region: CloudWatch console > Settings > "
    "X-Ray traces > Transaction Search > Enable (or, with the CloudWatch Logs resource policy that lets X-Ray write "
    "to aws/spans in place, aws xray update-trace-segment-destination --destination CloudWatchLogs); "
    "docs/deploy.md"
)


def check_transaction_search(xray: Any) -> CheckResult:
    """Pass when trace segments go to CloudWatch Logs and the change is active."""
    try:
        answer = xray.get_trace_segment_destination()
    except AwsError as error:
        fix = "allow xray:GetTraceSegmentDestination (Resource '*')" if is_access_denied(error) else FIX
        return CheckResult(NAME, Status.FAIL, f"cannot read the trace segment destination: {describe(error)}", fix)
    destination, status = answer.get("Destination"), answer.get("Status")
    found = f"trace segments go to {destination} ({status})"
    if destination == "CloudWatchLogs" and status == "ACTIVE":
        return CheckResult(NAME, Status.PASS, f"on: {found}")
    if destination == "CloudWatchLogs":
        return CheckResult(
            NAME, Status.WARN, f"turning on: {found}", "wait until it is ACTIVE; the agent's traces show after that"
        )
    return CheckResult(NAME, Status.FAIL, f"off: {found}; the voice agent's AgentCore traces would not show", FIX)


__all__ = ["FIX", "NAME", "check_transaction_search"]
