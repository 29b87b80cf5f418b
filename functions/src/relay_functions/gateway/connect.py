"""``$connect``: record the connection with its user (from the authorizer's context) and the user's stable
AgentCore session id (one conversation per user, shared by all their connections, 33-256 characters).
Answers 200 (connected) or 401 when the authorizer passed no user (a misconfigured route)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.utilities.data_classes import APIGatewayWebSocketEvent
from aws_lambda_powertools.utilities.typing import LambdaContext

from relay_functions.gateway.connections import Connection
from relay_functions.gateway.deps import GatewayDeps, process_deps
from relay_functions.gateway.lambda_handler import gateway_handler
from relay_functions.gateway.observability import count, logger, tracer


def authorized_user(raw_event: Mapping[str, Any]) -> str | None:
    """The ``user_id`` the authorizer put in ``requestContext.authorizer`` (None if absent)."""
    authorizer = raw_event.get("requestContext", {}).get("authorizer") or {}
    user_id = authorizer.get("user_id") or authorizer.get("principalId")
    return user_id if isinstance(user_id, str) and user_id else None


@tracer.capture_method
def record_connection(raw_event: Mapping[str, Any], deps: GatewayDeps) -> Connection | None:
    """Record the connection; None when the event carries no authorized user."""
    user_id = authorized_user(raw_event)
    if user_id is None:
        return None
    connection_id = APIGatewayWebSocketEvent(dict(raw_event)).request_context.connection_id
    session_id = deps.connections.conversation_session(user_id)
    return deps.connections.put(connection_id, user_id=user_id, session_id=session_id)


@gateway_handler(__name__)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    connection = record_connection(event, process_deps())
    if connection is None:
        logger.error("$connect reached without an authorized user: check the route's authorizer")
        count("ConnectionsRefused")
        return {"statusCode": 401}
    count("Connections")
    logger.info("connected", extra={"connection_id": connection.connection_id, "user_id": connection.user_id})
    return {"statusCode": 200}
