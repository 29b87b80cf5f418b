"""``cancel``: barge-in. Flags the turn (named, or the connection's running one) in the turns table, with the
client's ``played_ms`` when it sent one; the relay, which reads the flag every ``turn_relay.POLL_INTERVAL_S``,
sends the agent its cancel request (carrying ``played_ms``: the agent keeps only the words heard) on the same
AgentCore session, and the client then gets the agent's ``agent_end`` with status ``cancelled``. No other
answer is sent on success; an unknown or finished turn is answered ``error unknown_turn``.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from relay_core.client_messages import Cancel, ClientErrorCode, ClientMessage
from relay_functions.gateway.connections import Connection
from relay_functions.gateway.deps import GatewayDeps, process_deps
from relay_functions.gateway.observability import append_keys, count, log_invocation, logger, metrics, tracer
from relay_functions.gateway.route_event import RouteContext, RouteFunction, handle_client_message, rejection


@tracer.capture_method
def cancel_turn(ctx: RouteContext, connection: Connection, message: Cancel, deps: GatewayDeps) -> None:
    """Flag the turn for cancellation, or raise ``unknown_turn``."""
    turn_id = message.turn_id or connection.active_turn
    if turn_id is None:
        raise rejection(ClientErrorCode.UNKNOWN_TURN, "no turn is running on this connection: nothing to cancel")
    append_keys(turn_id=turn_id)
    if not deps.turns.request_cancel(turn_id, user_id=connection.user_id, played_ms=message.played_ms):
        raise rejection(ClientErrorCode.UNKNOWN_TURN, f"turn {turn_id!r} is not running (unknown, or already over)")
    count("CancelsRequested")
    logger.info("cancel requested", extra={"played_ms": message.played_ms})


ROUTES: dict[type[ClientMessage], RouteFunction] = {Cancel: cancel_turn}


@log_invocation
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle_client_message(event, process_deps(), ROUTES)
