"""The relay function: invoked asynchronously by ``sendMessage`` with a :class:`RelayRequest`, it runs one
:class:`~relay_functions.gateway.turn_relay.TurnRelay` to the turn's end and records metrics. ``cancel`` invokes
it the same way with a :class:`LateCancel` (a barge-in after the turn's stream ended), which it passes to the
agent, however long a cold runtime session takes to answer, and reports to the client only if it fails."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from relay_core.client.messages import ClientErrorCode, Rejection, serialize
from relay_core.errors import InvalidFieldError
from relay_core.relay.turn_record import RelayOutcome
from relay_functions.gateway.agent_runtime import AgentUnavailableError
from relay_functions.gateway.deps import GatewayDeps, process_deps
from relay_functions.gateway.lambda_handler import gateway_handler
from relay_functions.gateway.observability import (
    append_keys,
    count,
    logger,
    milliseconds,
    tracer,
)
from relay_functions.gateway.relay_request import LATE_CANCEL_FAILED, LateCancel, RelayRequest, is_late_cancel
from relay_functions.gateway.turn_relay import RelayResult, TurnRelay


@tracer.capture_method
def relay_turn(payload: Mapping[str, Any], deps: GatewayDeps) -> RelayResult:
    """Relay the turn described by ``payload`` (the relay function's invocation payload)."""
    request = RelayRequest.from_json(dict(payload))
    append_keys(turn_id=request.turn_id, user_id=request.user_id)
    relay = TurnRelay(
        request,
        turns=deps.turns,
        connections=deps.connections,
        poster=deps.poster(request.connections_endpoint),
        agent=deps.agent_runtime,
        resume_window_s=deps.settings.resume_window_s,
        clock=deps.clock,
        text_window_s=deps.settings.text_coalesce_s,
    )
    return relay.run()


@tracer.capture_method
def tell_agent_what_was_heard(late: LateCancel, deps: GatewayDeps) -> bool:
    """Send the agent the late barge-in on the turn's session; on failure, tell the client (``error
    agent_unavailable`` naming the turn). True when the agent took it."""
    append_keys(turn_id=late.turn_id)
    try:
        deps.agent_runtime.cancel(session_id=late.session_id, request_id=late.turn_id, played_ms=late.played_ms)
    except AgentUnavailableError as exc:
        logger.error("the agent's late cancel failed: %s", exc)
        error = Rejection(ClientErrorCode.AGENT_UNAVAILABLE.value, LATE_CANCEL_FAILED, turn_id=late.turn_id)
        deps.poster(late.connections_endpoint).post(late.connection_id, serialize(error))
        return False
    logger.info("late barge-in sent to the agent", extra={"played_ms": late.played_ms})
    return True


def record(result: RelayResult) -> None:
    count("MessagesPosted", result.posted)
    if result.failed_posts:
        count("PostFailures", result.failed_posts)
    if result.time_to_first_audio_s is not None:
        milliseconds("TimeToFirstAudio", result.time_to_first_audio_s)
    if result.cancel_latency_s is not None:
        milliseconds("CancelLatency", result.cancel_latency_s)
    if result.outcome == RelayOutcome.ABANDONED:
        count("TurnsAbandoned")


@gateway_handler(__name__)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if is_late_cancel(event):
        try:
            late = LateCancel.from_json(event)
        except InvalidFieldError as exc:
            logger.error("the relay was invoked with a bad late cancel", extra={"reason": exc.message})
            return {"outcome": "invalid_payload"}
        return {"outcome": "late_cancel", "delivered": tell_agent_what_was_heard(late, process_deps())}
    try:
        result = relay_turn(event, process_deps())
    except InvalidFieldError as exc:
        logger.error("the relay was invoked with a bad payload", extra={"reason": exc.message})
        return {"outcome": "invalid_payload"}
    record(result)
    logger.info(
        "turn relayed",
        extra={"outcome": result.outcome.value, "messages": result.messages, "replays": result.replays},
    )
    return {"outcome": result.outcome.value, "messages": result.messages}
