"""``resume {turn_id, after_seq}``: a client back on a new connection (same user, within RESUME_WINDOW_S of
losing the old one) takes over its running turn.

This handler only validates and switches: it claims the new connection for the turn (``turn_in_progress`` if
another turn runs there), then one conditional write on the turn record checks the user, that the relay is
still there (state not ``closed``) and that the client was not away too long, and stores the new connection
id, ``after_seq`` and a bumped ``resume_count``; the connection the turn leaves is then released (it no longer
runs the turn, and may start another: the relay, which releases it too at the end, may not have started yet).
That connection is the one this write replaced, as the write itself returns it (``ReturnValues=ALL_OLD``): of
two resumes racing, the second releases the first's connection, which the relay may never see.

Whatever order DynamoDB applies these writes and the relay's in, no connection stays claimed by a finished turn:
the claim comes before the switch and is released if the switch fails (a closed turn refuses it); a switch that
succeeds comes before the relay's close, which is conditional on ``resume_count`` (the relay must read it, serve
the new connection, and release it when it exits). docs/functions.md, "Resume and the connection's claim".
The relay (another Lambda, which holds the turn's recent messages) sees the switch within
``turn_relay.POLL_INTERVAL_S`` and posts ``turn_accepted`` then every message after ``after_seq``, then the rest
live. Refusals: ``unknown_turn`` (no such turn of this user), ``resume_expired`` (the turn finished and its relay
exited, or the window passed).
"""

from __future__ import annotations

from relay_core.client.messages import ClientErrorCode, ClientMessage, Resume
from relay_core.errors import RelayError
from relay_functions.gateway.connections import Connection
from relay_functions.gateway.deps import GatewayDeps
from relay_functions.gateway.lambda_handler import action_handler
from relay_functions.gateway.observability import append_keys, count, logger, tracer
from relay_functions.gateway.route_event import Route, RouteContext, rejection


@tracer.capture_method
def resume_turn(ctx: RouteContext, connection: Connection, message: Resume, deps: GatewayDeps) -> None:
    """Switch the turn to this connection, or raise a rejection (the connection is left as it was)."""
    append_keys(turn_id=message.turn_id)
    if not deps.connections.claim_turn(ctx.connection_id, message.turn_id, reclaim=True):
        raise rejection(ClientErrorCode.TURN_IN_PROGRESS, "another turn is running on this connection")
    try:
        left = deps.turns.resume(
            message.turn_id,
            user_id=connection.user_id,
            connection_id=ctx.connection_id,
            after_seq=message.after_seq,
            window_s=deps.settings.resume_window_s,
        )
    except RelayError:
        deps.connections.release_turn(ctx.connection_id, message.turn_id)
        raise
    if left.connection_id != ctx.connection_id:
        # the connection the switch took the turn from no longer runs it (the relay may not have started yet to
        # release it, or may never see it: a second resume can switch the turn on before the relay's next read)
        deps.connections.release_turn(left.connection_id, message.turn_id)
    count("Resumes")
    logger.info("turn switched to this connection", extra={"after_seq": message.after_seq})


ROUTES: dict[type[ClientMessage], Route] = {Resume: resume_turn}


handler = action_handler(__name__, ROUTES)
