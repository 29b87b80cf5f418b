"""Lambda task ``relay_functions.ops.cleanup_agent_runtime.handler``: one step of removing the AgentCore runtime.

Idempotent; the workflow calls it until it answers ``gone``. Each call: if the runtime no longer exists ->
``gone``; if it has endpoints other than DEFAULT -> asks for their deletion and answers ``deleting_endpoints``
(the runtime goes only once they are gone); otherwise asks for the runtime's deletion (unless already under way)
and answers ``deleting_runtime``. A runtime in ``DELETE_FAILED``, or a refused deletion, raises
:class:`~relay_functions.ops.errors.DeleteRefusedError`.

Input ``{"runtime_id"}``; output ``{"state", "endpoints"}``.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from botocore.exceptions import ClientError

from relay_functions.ops import agent_runtimes
from relay_functions.ops.cleanup_targets import DELETING_STATUSES, FAILED_DELETE_STATUSES
from relay_functions.ops.errors import DeleteRefusedError, InvalidTaskInputError

logger = Logger(service="relay-ops")


def step(runtime_id: str, control: agent_runtimes.AgentRuntimeControl) -> dict[str, Any]:
    """Make one step of progress towards the runtime being gone; say where things stand."""
    try:
        status = control.runtime_status(runtime_id)
        if status is None:
            return {"state": "gone", "endpoints": []}
        if status in FAILED_DELETE_STATUSES:
            raise DeleteRefusedError(f"AgentCore runtime {runtime_id} is {status}: look at its failure reason")
        pending = [e for e in control.endpoints(runtime_id) if e.name != agent_runtimes.DEFAULT_ENDPOINT]
        if pending:
            for endpoint in pending:
                if endpoint.status not in DELETING_STATUSES:
                    control.delete_endpoint(runtime_id, endpoint.name)
            return {"state": "deleting_endpoints", "endpoints": [e.name for e in pending]}
        if status not in DELETING_STATUSES:
            control.delete_runtime(runtime_id)
        return {"state": "deleting_runtime", "endpoints": []}
    except ClientError as exc:
        error = exc.response["Error"]
        raise DeleteRefusedError(
            f"AgentCore refused to delete runtime {runtime_id} or its endpoints: {error.get('Code')}: "
            f"{error.get('Message')}"
        ) from exc


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    runtime_id = event.get("runtime_id")
    if not isinstance(runtime_id, str) or not runtime_id:
        raise InvalidTaskInputError("give 'runtime_id', the AgentCore runtime id")
    result = step(runtime_id, agent_runtimes.make_control())
    logger.info("agent runtime cleanup step", runtime_id=runtime_id, **result)
    return result


__all__ = ["handler", "step"]
