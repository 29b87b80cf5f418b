"""Lambda task ``relay_functions.ops.cleanup_check.handler``: is a deleted resource really gone?

Input ``{"kind", "name", "errors", "error_key", "wait"}``: ``errors[error_key]``, when present, is the error the
workflow caught from the delete call (``{"Error", "Cause"}``). Output ``{"gone", "status"}``.

- gone -> ``{"gone": true}`` (a delete that failed with "not found" ends here too: NotFound counts as success);
- still there and being deleted -> ``{"gone": false}`` (the workflow waits and asks again, a bounded number of times);
- still there, not being deleted, and the delete call failed -> :class:`~relay_functions.ops.errors.DeleteRefusedError`
  quoting the refusal; the same when ``wait`` is false (deletions that are synchronous must be done at once).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from relay_functions.ops.cleanup_targets import DELETING_STATUSES, FAILED_DELETE_STATUSES, ResourceKind, resource_status
from relay_functions.ops.errors import DeleteRefusedError, InvalidTaskInputError

logger = Logger(service="relay-ops")


def check(kind: ResourceKind, name: str, *, delete_error: dict[str, Any] | None, wait: bool) -> dict[str, Any]:
    status = resource_status(kind, name)
    if status is None:
        return {"gone": True, "status": "gone"}
    refusal = (
        f"; the delete call failed: {delete_error.get('Error')}: {delete_error.get('Cause')}" if delete_error else ""
    )
    if status in FAILED_DELETE_STATUSES or (status not in DELETING_STATUSES and (delete_error or not wait)):
        raise DeleteRefusedError(f"{kind.value} {name} still exists (status {status}){refusal}")
    return {"gone": False, "status": status}


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    try:
        kind = ResourceKind(str(event.get("kind")))
    except ValueError as exc:
        raise InvalidTaskInputError(f"'kind' must be one of {', '.join(k.value for k in ResourceKind)}") from exc
    name = event.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidTaskInputError("give 'name', the resource's name")
    errors = event.get("errors") or {}
    delete_error = errors.get(event.get("error_key", "")) if isinstance(errors, dict) else None
    result = check(kind, name, delete_error=delete_error, wait=bool(event.get("wait", True)))
    logger.info("cleanup check", kind=kind.value, resource=name, **result)
    return result


__all__ = ["check", "handler"]
