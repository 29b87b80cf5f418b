"""The decisions API Gateway makes around each Lambda call, as plain functions: which route a message takes
(``$request.body.action``), whether an authorizer's answer allows the connection, and what a Lambda proxy
integration's return value means.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from relay_local.gateway.events import DEFAULT_ROUTE, JsonDict

ROUTE_SELECTION_KEY = "action"
"""The relay API's route selection expression is ``$request.body.action``."""


def select_route(data: str | bytes, routes: Collection[str]) -> str:
    """The route key of one client message: the body's ``action`` when it is a JSON object naming a defined route,
    else ``$default`` (binary frames, non-JSON text, missing or unknown action), as API Gateway selects."""
    if isinstance(data, bytes):
        return DEFAULT_ROUTE
    try:
        body = json.loads(data)
    except ValueError:
        return DEFAULT_ROUTE
    action = body.get(ROUTE_SELECTION_KEY) if isinstance(body, dict) else None
    if isinstance(action, str) and action in routes:
        return action
    return DEFAULT_ROUTE


class AuthorizerResponseError(ValueError):
    """The authorizer returned something that is not an IAM policy response (API Gateway answers 500)."""


@dataclass(frozen=True)
class AuthorizerDecision:
    """An authorizer's verdict on one ``$connect``: allowed or not, and what later events get under
    ``requestContext.authorizer`` (``principalId`` + its ``context``)."""

    allowed: bool
    context: JsonDict = field(default_factory=dict)


def _statement_matches(statement: dict[str, Any], method_arn: str) -> bool:
    resources = statement.get("Resource", [])
    if isinstance(resources, str):
        resources = [resources]
    actions = statement.get("Action", [])
    if isinstance(actions, str):
        actions = [actions]
    action_ok = any(fnmatch.fnmatchcase("execute-api:Invoke", str(a)) for a in actions)
    return action_ok and any(fnmatch.fnmatchcase(method_arn, str(r)) for r in resources)


def evaluate_authorizer(response: object, method_arn: str) -> AuthorizerDecision:
    """Evaluate a REQUEST authorizer's IAM policy for ``method_arn``: an explicit Deny wins, then any Allow;
    no matching statement denies. Context values must be strings, numbers or booleans (AWS rejects others)."""
    if not isinstance(response, dict):
        raise AuthorizerResponseError(f"the authorizer returned {type(response).__name__}, not a policy object")
    policy = response.get("policyDocument")
    principal = response.get("principalId")
    if not isinstance(policy, dict) or not isinstance(principal, str):
        raise AuthorizerResponseError("the authorizer response needs a string principalId and a policyDocument")
    statements = policy.get("Statement", [])
    if isinstance(statements, dict):
        statements = [statements]
    if not isinstance(statements, list):
        raise AuthorizerResponseError("policyDocument.Statement must be a list of statements")
    matching = [s for s in statements if isinstance(s, dict) and _statement_matches(s, method_arn)]
    denied = any(s.get("Effect") == "Deny" for s in matching)
    allowed = not denied and any(s.get("Effect") == "Allow" for s in matching)
    raw_context = response.get("context") or {}
    if not isinstance(raw_context, dict):
        raise AuthorizerResponseError("the authorizer's context must be an object")
    for key, value in raw_context.items():
        if not isinstance(value, str | int | float | bool):
            raise AuthorizerResponseError(f"authorizer context value {key!r} must be a string, number or boolean")
    context: JsonDict = {**raw_context, "principalId": principal, "integrationLatency": 0}
    return AuthorizerDecision(allowed=allowed, context=context)


@dataclass(frozen=True)
class IntegrationResult:
    """A Lambda proxy integration's answer: the status code and the body to send back on a two-way route."""

    status_code: int
    body: str | None


def integration_result(returned: object) -> IntegrationResult:
    """Read a handler's return value as API Gateway reads a Lambda proxy response: ``{"statusCode", "body"}``;
    a missing statusCode is 200; ``None`` has no body; any other non-dict value is sent as its JSON."""
    if returned is None:
        return IntegrationResult(200, None)
    if not isinstance(returned, dict):
        return IntegrationResult(200, json.dumps(returned))
    status = returned.get("statusCode", 200)
    body = returned.get("body")
    return IntegrationResult(
        int(status) if isinstance(status, int | str) and str(status).isdigit() else 500,
        None if body is None else str(body),
    )


__all__ = [
    "ROUTE_SELECTION_KEY",
    "AuthorizerDecision",
    "AuthorizerResponseError",
    "IntegrationResult",
    "evaluate_authorizer",
    "integration_result",
    "select_route",
]
