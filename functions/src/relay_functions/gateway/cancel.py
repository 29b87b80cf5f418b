"""``cancel``: barge-in. Flags the turn (named, or the connection's running one) in the turns table, with the
client's ``played_ms`` when it sent one; the relay, which reads the flag every ``turn_relay.POLL_INTERVAL_S``,
sends the agent its cancel request (carrying ``played_ms``: the agent keeps only the words heard) on the same
AgentCore session, and the client then gets the agent's ``agent_end`` with status ``cancelled``.

A turn whose stream is already over may still be playing on the client: a cancel of it WITH ``played_ms`` goes
to the agent directly (the late barge-in: the agent cuts the reply it remembers at the last word heard). No other
answer is sent on success; an unknown turn, someone else's, or a finished one without ``played_ms`` is answered
``error unknown_turn``.
"""

from __future__ import annotations

from relay_core.client.messages import Cancel, ClientErrorCode, ClientMessage
from relay_functions.gateway.agent_runtime import AgentUnavailableError
from relay_functions.gateway.connections import Connection
from relay_functions.gateway.deps import GatewayDeps
from relay_functions.gateway.lambda_handler import action_handler
from relay_functions.gateway.observability import append_keys, count, logger, tracer
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
    if message.played_ms is not None and late_barge_in(turn_id, connection, message.played_ms, deps):
        return
    raise rejection(ClientErrorCode.UNKNOWN_TURN, f"turn {turn_id!r} is not running (unknown, or already over)")


@tracer.capture_method
def late_barge_in(turn_id: str, connection: Connection, played_ms: int, deps: GatewayDeps) -> bool:
    """The listener stopped the audio of a turn whose stream is already over (a reply is spoken slower than it is
    made, so its audio plays on after ``agent_end``): tell the agent how much was heard, on the turn's own
    session, so that it keeps only those words in the conversation (it cuts its latest turn if no newer one
    started). False when the turn is not this user's. Raises ``agent_unavailable`` if the agent cannot be reached."""
    turn = deps.turns.get(turn_id)
    if turn is None or turn.user_id != connection.user_id:
        return False
    try:
        deps.agent_runtime.cancel(session_id=turn.session_id, request_id=turn_id, played_ms=played_ms)
    except AgentUnavailableError as exc:
        logger.error("the agent's late cancel failed: %s", exc)
        raise rejection(
            ClientErrorCode.AGENT_UNAVAILABLE, "the agent could not be told what you heard: try again"
        ) from exc
    count("LateBargeIns")
    logger.info("late barge-in sent to the agent", extra={"played_ms": played_ms})
    return True


ROUTES: dict[type[ClientMessage], Route] = {Cancel: cancel_turn}


handler = action_handler(__name__, ROUTES)
