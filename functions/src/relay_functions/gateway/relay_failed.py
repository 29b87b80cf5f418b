"""The relay's on-failure destination: ends a turn whose asynchronous relay invocation Lambda gave up on.

``sendMessage`` posts ``turn_accepted`` and then queues the relay (``InvocationType=Event``, no retries). If Lambda
cannot run it before the event's maximum age (throttled: the relay's reserved concurrency, or the account's, is
in use) or the relay itself fails, Lambda sends this function the invocation record (``requestPayload`` is the
:class:`~relay_functions.gateway.relay_request.RelayRequest`; ``requestContext.condition`` says why:
``EventAgeExceeded``, ``RetriesExhausted``). Without it the client would wait for a turn that never comes.

- The relay never ran: the turn is run here the way the relay runs one whose agent cannot be reached, so the
  client gets the turn's ``error agent_unavailable`` (seq 0) on its current connection, a detached client
  can still resume to it, the record is closed and the connection may start a new turn.
- A relay took the turn and then failed (timed out, crashed): the record is closed ``failed``, the connection
  released, and the client told with an ``error internal_error`` naming the turn (nothing more can be relayed).
- A late barge-in (:class:`~relay_functions.gateway.relay_request.LateCancel`) the relay never passed on: the
  client gets ``error agent_unavailable`` naming the turn, as when the agent cannot be told.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from relay_core.agent.events import AgentPayload
from relay_core.client.messages import ClientErrorCode, Rejection, serialize
from relay_core.errors import InvalidFieldError
from relay_core.relay.turn_record import RelayOutcome
from relay_functions.gateway.agent_runtime import AgentUnavailableError, TurnStream
from relay_functions.gateway.deps import GatewayDeps, process_deps
from relay_functions.gateway.lambda_handler import gateway_handler
from relay_functions.gateway.observability import append_keys, count, logger, tracer
from relay_functions.gateway.relay_request import LATE_CANCEL_FAILED, LateCancel, RelayRequest, is_late_cancel
from relay_functions.gateway.turn_relay import RelayResult, TurnRelay

RELAY_DIED = "the turn could not be finished: send your message again"


class NeverRelayed:
    """The agent as seen by a turn whose relay never ran: it cannot be reached (and nothing is running there)."""

    def __init__(self, condition: str) -> None:
        self.condition = condition

    def open_turn(self, *, session_id: str, payload: AgentPayload) -> TurnStream:
        raise AgentUnavailableError(f"the relay was never run ({self.condition})")

    def cancel(self, *, session_id: str, request_id: str, played_ms: int | None = None) -> list[str]:
        return []


def failed_invocation(record: Mapping[str, Any]) -> tuple[RelayRequest, str]:
    """The turn and Lambda's reason (``condition``) of an asynchronous invocation record."""
    context = record.get("requestContext")
    condition = str(context.get("condition", "unknown")) if isinstance(context, Mapping) else "unknown"
    return RelayRequest.from_json(record.get("requestPayload")), condition


@tracer.capture_method
def end_failed_turn(request: RelayRequest, condition: str, deps: GatewayDeps) -> RelayResult:
    """End the turn whose relay invocation failed (see the module's docstring)."""
    relay = TurnRelay(
        request,
        turns=deps.turns,
        connections=deps.connections,
        poster=deps.poster(request.connections_endpoint),
        agent=NeverRelayed(condition),
        resume_window_s=deps.settings.resume_window_s,
        clock=deps.clock,
    )
    result = relay.run()
    if result.outcome != RelayOutcome.DUPLICATE:
        return result
    turn = deps.turns.get(request.turn_id)  # a relay took it, then failed: close what it left open
    if turn is not None:
        deps.turns.close(request.turn_id, seen_resume_count=turn.resume_count, outcome=RelayOutcome.FAILED)
        deps.connections.release_turn(turn.connection_id, request.turn_id)
        error = Rejection(ClientErrorCode.INTERNAL.value, RELAY_DIED, turn_id=request.turn_id)
        deps.poster(request.connections_endpoint).post(turn.connection_id, serialize(error))
    return RelayResult(outcome=RelayOutcome.FAILED)


@gateway_handler(__name__)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    payload = event.get("requestPayload")
    if is_late_cancel(payload):  # a late barge-in the relay never passed on: the client is told so
        try:
            late = LateCancel.from_json(payload)
        except InvalidFieldError as exc:
            logger.error("a failed late cancel without a turn", extra={"reason": exc.message})
            return {"outcome": "invalid_payload"}
        error = Rejection(ClientErrorCode.AGENT_UNAVAILABLE.value, LATE_CANCEL_FAILED, turn_id=late.turn_id)
        process_deps().poster(late.connections_endpoint).post(late.connection_id, serialize(error))
        count("RelayInvocationsFailed")
        return {"outcome": "late_cancel_failed"}
    try:
        request, condition = failed_invocation(event)
    except InvalidFieldError as exc:
        logger.error("a failed relay invocation without a turn", extra={"reason": exc.message})
        return {"outcome": "invalid_payload"}
    append_keys(turn_id=request.turn_id, user_id=request.user_id)
    logger.error("the relay invocation failed: ending the turn", extra={"condition": condition})
    count("RelayInvocationsFailed")
    result = end_failed_turn(request, condition, process_deps())
    return {"outcome": result.outcome.value, "condition": condition}
