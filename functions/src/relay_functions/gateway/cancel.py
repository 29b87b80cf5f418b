"""``cancel``: barge-in. Flags the turn (named, or the connection's running one) in the turns table, with the
client's ``played_ms`` when it sent one; the relay, which reads the flag every ``turn_relay.POLL_INTERVAL_S``,
sends the agent its cancel request (carrying ``played_ms``: the agent keeps only the words heard) on the same
AgentCore session, and the client then gets the agent's ``agent_end`` with status ``cancelled``.

A turn whose stream is already over may still be playing on the client: a cancel of it WITH ``played_ms`` goes
to the agent (the late barge-in: the agent cuts the reply it remembers at the last word heard) through the relay
function, invoked asynchronously (:class:`~relay_functions.gateway.relay_request.LateCancel`): the agent's
session may have gone cold, and starting a new microVM may take longer than this function may run, so this
function never calls the agent itself. No other answer is sent on success; an unknown turn, someone else's, or a
finished one without ``played_ms`` is answered ``error unknown_turn``; if the agent cannot be told, the relay
posts ``error agent_unavailable`` naming the turn.
"""

from __future__ import annotations

from botocore.exceptions import BotoCoreError, ClientError

from relay_core.client.messages import Cancel, ClientErrorCode, ClientMessage
from relay_core.fields import encode_json
from relay_functions.gateway.connections import Connection
from relay_functions.gateway.deps import GatewayDeps
from relay_functions.gateway.lambda_handler import action_handler
from relay_functions.gateway.observability import append_keys, count, logger, tracer
from relay_functions.gateway.relay_request import LateCancel
from relay_functions.gateway.route_event import Route, RouteContext, rejection


@tracer.capture_method
def cancel_turn(ctx: RouteContext, connection: Connection, message: Cancel, deps: GatewayDeps) -> None:
    """Flag the turn for cancellation; for a turn already over, a cancel with ``played_ms`` goes to the agent
    directly (:func:`late_barge_in`); otherwise raise ``unknown_turn``."""
    turn_id = message.turn_id or connection.active_turn
    if turn_id is None:
        raise rejection(ClientErrorCode.UNKNOWN_TURN, "no turn is running on this connection: nothing to cancel")
    append_keys(turn_id=turn_id)
    if deps.turns.request_cancel(turn_id, user_id=connection.user_id, played_ms=message.played_ms):
        count("CancelsRequested")
        logger.info("cancel requested", extra={"played_ms": message.played_ms})
        return
    if message.played_ms is not None and late_barge_in(ctx, turn_id, connection, message.played_ms, deps):
        return
    raise rejection(ClientErrorCode.UNKNOWN_TURN, f"turn {turn_id!r} is not running (unknown, or already over)")


@tracer.capture_method
def late_barge_in(ctx: RouteContext, turn_id: str, connection: Connection, played_ms: int, deps: GatewayDeps) -> bool:
    """The listener stopped the audio of a turn whose stream is already over (a reply is spoken slower than it is
    made, so its audio plays on after ``agent_end``): have the relay function tell the agent how much was heard,
    on the turn's own session, so that it keeps only those words in the conversation (it cuts its latest turn if
    no newer one started). False when the turn is not this user's. Raises ``agent_unavailable`` if the relay
    function cannot be invoked."""
    turn = deps.turns.get(turn_id)
    if turn is None or turn.user_id != connection.user_id:
        return False
    late = LateCancel(
        turn_id=turn_id,
        session_id=turn.session_id,
        played_ms=played_ms,
        connection_id=ctx.connection_id,
        connections_endpoint=deps.settings.connections_endpoint_url or ctx.endpoint_url,
    )
    try:
        deps.lambdas.invoke(
            FunctionName=deps.settings.require("relay_function_name").relay_function_name,
            InvocationType="Event",
            Payload=encode_json(late.to_json()).encode("utf-8"),
        )
    except (ClientError, BotoCoreError) as exc:
        logger.error("the late cancel could not be handed to the relay", extra={"reason": type(exc).__name__})
        raise rejection(
            ClientErrorCode.AGENT_UNAVAILABLE, "the agent could not be told what you heard: try again"
        ) from exc
    count("LateBargeIns")
    logger.info("late barge-in handed to the relay", extra={"played_ms": played_ms})
    return True


ROUTES: dict[type[ClientMessage], Route] = {Cancel: cancel_turn}


handler = action_handler(__name__, ROUTES)
