"""Every ``${Placeholder}`` the state machine definitions use, with its meaning: the CDK app substitutes all of them.

The definitions in ``statemachines/*.asl.json`` are valid JSON with placeholders inside strings only (numbers are
read at run time with ``States.StringToJson``), so CDK's ``definitionSubstitutions`` (plain text replacement) and
:func:`substitute` give the same result. :data:`PLACEHOLDERS` is the one list; a test checks that every definition
uses only these names and that nothing is left after substitution.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

PLACEHOLDER_PATTERN: Final = re.compile(r"\$\{([A-Za-z][A-Za-z0-9]*)\}")

PLACEHOLDERS: Final[dict[str, str]] = {
    # --- Lambda task functions (one function per handler; see docs/operations.md) ---------------------------
    "SmokeKokoroFunctionArn": "ARN of the function with handler relay_functions.ops.smoke_kokoro.handler",
    "SmokeAgentFunctionArn": "ARN of the function with handler relay_functions.ops.smoke_agent.handler",
    "SmokeGatewayFunctionArn": "ARN of the function with handler relay_functions.ops.smoke_gateway.handler",
    "SmokeReportFunctionArn": "ARN of the function with handler relay_functions.ops.smoke_report.handler",
    "AuditScanFunctionArn": "ARN of the function with handler relay_functions.ops.audit_scan.handler",
    "CleanupAgentRuntimeFunctionArn": (
        "ARN of the function with handler relay_functions.ops.cleanup_agent_runtime.handler"
    ),
    "CleanupCheckFunctionArn": "ARN of the function with handler relay_functions.ops.cleanup_check.handler",
    "CleanupBucketFunctionArn": "ARN of the function with handler relay_functions.ops.cleanup_bucket.handler",
    "CleanupRepositoryFunctionArn": "ARN of the function with handler relay_functions.ops.cleanup_repository.handler",
    "CleanupInventoryFunctionArn": "ARN of the function with handler relay_functions.ops.cleanup_inventory.handler",
    "EraseUserDataFunctionArn": "ARN of the function with handler relay_functions.ops.erase_user_data.handler",
    # --- Deployed resources ----------------------------------------------------------------------------------
    "EndpointName": "name of the SageMaker endpoint serving the Kokoro container",
    "EndpointConfigName": "name of that endpoint's endpoint configuration",
    "ModelName": "name of the SageMaker model the endpoint configuration uses",
    "AgentRuntimeId": "id of the AgentCore runtime hosting the voice agent (not the ARN)",
    "WeightsBucketName": "name of the S3 bucket caching the Kokoro weights (removed only when asked explicitly)",
    "HistoryBucketName": "name of the S3 bucket keeping the agent's conversations (removed only when asked explicitly)",
    "ConnectionsTableName": "name of the gateway's connections table (connections, conversations, turn counters)",
    "TurnsTableName": "name of the gateway's turns table (one record per turn)",
    "EcrRepositoryName": "name of the ECR repository holding the container images (removed only when asked explicitly)",
    "AuditReportBucketName": "name of the S3 bucket the dependency audit writes its JSON reports to",
    "AuditTopicArn": "ARN of the SNS topic notified when the dependency audit finds something",
    # --- Timing (strings holding a number, read with States.StringToJson) -----------------------------------
    "EndpointPollSeconds": "seconds between two checks of the SageMaker endpoint status (production: 30)",
    "EndpointMaxPolls": "checks of the endpoint status before the smoke test gives up (production: 60)",
    "DeletePollSeconds": "seconds between two checks that a deleted resource is gone (production: 15)",
    "DeleteMaxPolls": "checks that a deleted resource is gone before the cleanup gives up (production: 80)",
}
"""Placeholder name -> what the CDK app must put there."""

PRODUCTION_TIMING: Final[dict[str, str]] = {
    "EndpointPollSeconds": "30",
    "EndpointMaxPolls": "60",
    "DeletePollSeconds": "15",
    "DeleteMaxPolls": "80",
}
"""The timing values production uses (bounded waits: 30 min for the endpoint, 20 min per deletion)."""

FUNCTION_HANDLERS: Final[dict[str, str]] = {
    "SmokeKokoroFunctionArn": "relay_functions.ops.smoke_kokoro.handler",
    "SmokeAgentFunctionArn": "relay_functions.ops.smoke_agent.handler",
    "SmokeGatewayFunctionArn": "relay_functions.ops.smoke_gateway.handler",
    "SmokeReportFunctionArn": "relay_functions.ops.smoke_report.handler",
    "AuditScanFunctionArn": "relay_functions.ops.audit_scan.handler",
    "CleanupAgentRuntimeFunctionArn": "relay_functions.ops.cleanup_agent_runtime.handler",
    "CleanupCheckFunctionArn": "relay_functions.ops.cleanup_check.handler",
    "CleanupBucketFunctionArn": "relay_functions.ops.cleanup_bucket.handler",
    "CleanupRepositoryFunctionArn": "relay_functions.ops.cleanup_repository.handler",
    "CleanupInventoryFunctionArn": "relay_functions.ops.cleanup_inventory.handler",
    "EraseUserDataFunctionArn": "relay_functions.ops.erase_user_data.handler",
}
"""Function-ARN placeholder -> the handler that function runs (the CDK app creates one function per entry)."""

STATE_MACHINES: Final[dict[str, str]] = {
    "smoke_test": "smoke_test.asl.json",
    "dependency_audit": "dependency_audit.asl.json",
    "cleanup": "cleanup.asl.json",
    "erase_user": "erase_user.asl.json",
}
"""Workflow name -> definition file in ``statemachines/``."""


class UnknownPlaceholderError(ValueError):
    """A definition uses a placeholder that is not in :data:`PLACEHOLDERS`, or a value is missing."""


def placeholders_in(text: str) -> set[str]:
    """The placeholder names used in ``text``."""
    return set(PLACEHOLDER_PATTERN.findall(text))


def substitute(text: str, values: dict[str, str]) -> str:
    """``text`` with every ``${Name}`` replaced by ``values[Name]`` (plain text, as CDK does). Raises
    :class:`UnknownPlaceholderError` naming every unknown or missing name."""
    used = placeholders_in(text)
    unknown = sorted(used - PLACEHOLDERS.keys())
    if unknown:
        raise UnknownPlaceholderError(f"not declared in relay_functions.ops.placeholders: {', '.join(unknown)}")
    missing = sorted(used - values.keys())
    if missing:
        raise UnknownPlaceholderError(f"no value given for: {', '.join(missing)}")
    return PLACEHOLDER_PATTERN.sub(lambda m: values[m.group(1)], text)


def definition_path(workflow: str, root: Path | None = None) -> Path:
    """Path of a workflow's definition (``root`` = repository root; default: found from this file)."""
    base = root if root is not None else Path(__file__).resolve().parents[4]
    return base / "statemachines" / STATE_MACHINES[workflow]


__all__ = [
    "FUNCTION_HANDLERS",
    "PLACEHOLDERS",
    "PLACEHOLDER_PATTERN",
    "PRODUCTION_TIMING",
    "STATE_MACHINES",
    "UnknownPlaceholderError",
    "definition_path",
    "placeholders_in",
    "substitute",
]
