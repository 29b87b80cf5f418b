"""``$disconnect``: forget the connection. If a turn was running on it, the turn is marked detached (now): its
relay stops posting and keeps buffering, and unless the client resumes within RESUME_WINDOW_S the relay
cancels the agent turn, so no speech is synthesized for nobody."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.utilities.data_classes import APIGatewayWebSocketEvent
from aws_lambda_powertools.utilities.typing import LambdaContext

from relay_functions.gateway.connections import Connection
from relay_functions.gateway.deps import GatewayDeps, process_deps
from relay_functions.gateway.lambda_handler import gateway_handler
from relay_functions.gateway.observability import count, logger, tracer


@tracer.capture_method
def forget_connection(raw_event: Mapping[str, Any], deps: GatewayDeps) -> Connection | None:
    """Delete the connection's record and detach its running turn; what the connection was (None if unknown)."""
    connection_id = APIGatewayWebSocketEvent(dict(raw_event)).request_context.connection_id
    connection = deps.connections.delete(connection_id)
    if connection is not None and connection.active_turn is not None:
        deps.turns.mark_detached(connection.active_turn, connection_id=connection_id)
    return connection


@gateway_handler(__name__)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    connection = forget_connection(event, process_deps())
    count("Disconnections")
    logger.info("disconnected", extra={"known": connection is not None})
    return {"statusCode": 200}
