"""``sendMessage``: start a turn and hand it to the relay, returning at once (API Gateway waits at most 29 s;
a turn may take minutes).

In order: the message is checked (relay_core); the connection is claimed for the turn with one conditional
write that also reads it (its user and AgentCore session: no read before it; a second turn while one runs:
``turn_in_progress``; an unrecorded connection: ``unauthorized``); the user's per-minute budget is taken
(``rate_limited``, which releases the claim); the user's current conversation is read (its AgentCore session id,
which ``newConversation`` may have replaced since the connection was made); the turn record is created with it
(the turn keeps that session to its end); ``turn_accepted`` is posted; then
the relay function is invoked asynchronously (``InvocationType=Event``). Posting ``turn_accepted`` before
the relay exists guarantees it reaches the client before the turn's seq 0. If the invoke fails the turn is
closed and the client gets ``agent_unavailable``.
"""

from __future__ import annotations

from botocore.exceptions import BotoCoreError, ClientError

from relay_core.client.messages import ClientErrorCode, ClientMessage, SendMessage, TurnAccepted, new_turn_id, serialize
from relay_core.fields import encode_json
from relay_core.relay.turn_record import RelayOutcome
from relay_functions.gateway.connections import ConnectionNotRegisteredError, is_conditional_failure
from relay_functions.gateway.deps import GatewayDeps
from relay_functions.gateway.lambda_handler import action_handler
from relay_functions.gateway.observability import append_keys, count, logger, tracer
from relay_functions.gateway.relay_request import RelayRequest
from relay_functions.gateway.route_event import (
    NOT_REGISTERED,
    ReadsItsConnection,
    Route,
    RouteContext,
    rejection,
)


@tracer.capture_method
def start_turn(ctx: RouteContext, message: SendMessage, deps: GatewayDeps) -> None:
    """Start ``message``'s turn on the connection, or raise a rejection (nothing is left half-done)."""
    turn_id = message.turn_id or new_turn_id()
    append_keys(turn_id=turn_id)
    try:
        connection = deps.connections.claim_new_turn(ctx.connection_id, turn_id)
    except ConnectionNotRegisteredError as exc:
        raise rejection(ClientErrorCode.UNAUTHORIZED, NOT_REGISTERED) from exc
    if connection is None:
        count("TurnsRejected")
        raise rejection(
            ClientErrorCode.TURN_IN_PROGRESS,
            "a turn is already running on this connection: send again when its terminal message arrives "
            "(cancel it to end it sooner)",
        )
    append_keys(user_id=connection.user_id)
    try:
        decision = deps.rate_limiter.try_acquire(connection.user_id)
        if not decision.allowed:
            count("TurnsRejected")
            raise rejection(
                ClientErrorCode.RATE_LIMITED,
                f"at most {deps.settings.turns_per_minute} turns a minute: "
                f"try again in {max(1, round(decision.retry_after_s))} s",
            )
        session_id = deps.connections.conversation_session(connection.user_id)
        try:
            deps.turns.create(
                turn_id, user_id=connection.user_id, session_id=session_id, connection_id=ctx.connection_id
            )
        except ClientError as exc:
            if is_conditional_failure(exc):
                raise rejection(ClientErrorCode.INVALID_FIELD, "this turn_id was already used: send a new one") from exc
            raise
    except BaseException:
        deps.connections.release_turn(ctx.connection_id, turn_id)
        raise
    ctx.send(serialize(TurnAccepted(turn_id)))
    request = RelayRequest(
        turn_id=turn_id,
        connection_id=ctx.connection_id,
        user_id=connection.user_id,
        session_id=session_id,
        connections_endpoint=deps.settings.connections_endpoint_url or ctx.endpoint_url,
        agent=message.to_agent_payload(request_id=turn_id),
    )
    try:
        invoke_relay(request, deps)
    except (ClientError, BotoCoreError) as exc:
        logger.error("the relay could not be invoked", extra={"reason": type(exc).__name__})
        deps.turns.close(turn_id, seen_resume_count=0, outcome=RelayOutcome.FAILED)
        deps.connections.release_turn(ctx.connection_id, turn_id)
        raise rejection(ClientErrorCode.AGENT_UNAVAILABLE, "the agent could not be reached: try again") from exc
    count("Turns")
    logger.info("turn handed to the relay")


@tracer.capture_method
def invoke_relay(request: RelayRequest, deps: GatewayDeps) -> None:
    """Invoke the relay function asynchronously with the turn (returns once Lambda has queued it)."""
    deps.lambdas.invoke(
        FunctionName=deps.settings.require("relay_function_name").relay_function_name,
        InvocationType="Event",
        Payload=encode_json(request.to_json()).encode("utf-8"),
    )


ROUTES: dict[type[ClientMessage], Route] = {SendMessage: ReadsItsConnection(start_turn)}


handler = action_handler(__name__, ROUTES)
