"""The relay's on-failure destination: Lambda's record of a relay invocation it gave up on (throttled past the
event's maximum age) ends that turn for the client, over moto DynamoDB and a recording @connections."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from relay_core.relay.turn_record import RelayOutcome, TurnState
from relay_functions.gateway import relay_failed
from relay_functions.gateway.deps import GatewayDeps
from relay_functions.gateway.relay_request import LateCancel, RelayRequest

EVENT = Path(__file__).resolve().parents[2] / "events" / "lambda" / "relay_on_failure.json"


@pytest.fixture
def record() -> dict[str, Any]:
    """The invocation record Lambda sends the on-failure destination (the documented shape)."""
    return dict(json.loads(EVENT.read_text(encoding="utf-8")))


@pytest.fixture
def poster(deps: GatewayDeps, gw: ModuleType) -> Any:
    recording = gw.RecordingPoster()
    deps.poster_factory = lambda _url: recording
    return recording


def accepted(deps: GatewayDeps, record: dict[str, Any]) -> RelayRequest:
    """What sendMessage did before queueing the relay: the connection claimed, the turn created."""
    request = RelayRequest.from_json(record["requestPayload"])
    deps.connections.put(request.connection_id, user_id=request.user_id, session_id=request.session_id)
    assert deps.connections.claim_turn(request.connection_id, request.turn_id)
    deps.turns.create(
        request.turn_id, user_id=request.user_id, session_id=request.session_id, connection_id=request.connection_id
    )
    return request


def test_a_turn_whose_relay_never_ran_ends_with_agent_unavailable(
    deps: GatewayDeps, poster: Any, record: dict[str, Any], lambda_context: Any
) -> None:
    request = accepted(deps, record)
    answer = relay_failed.handler(record, lambda_context)
    assert answer == {"outcome": RelayOutcome.FAILED.value, "condition": "EventAgeExceeded"}
    [message] = poster.messages(request.connection_id)
    assert (message["type"], message["code"], message["seq"]) == ("error", "agent_unavailable", 0)
    assert message["turn_id"] == request.turn_id
    turn = deps.turns.get(request.turn_id)
    assert turn is not None and turn.state is TurnState.CLOSED
    assert deps.connections.claim_turn(request.connection_id, "t-next")  # the connection may start a new turn


def test_a_turn_whose_relay_started_and_died_is_closed_and_the_client_told(
    deps: GatewayDeps, poster: Any, record: dict[str, Any], lambda_context: Any
) -> None:
    request = accepted(deps, record)
    assert deps.turns.claim_relay(request.turn_id)  # a relay took the turn, then timed out
    record["requestContext"]["condition"] = "RetriesExhausted"
    assert relay_failed.handler(record, lambda_context)["outcome"] == RelayOutcome.FAILED.value
    [message] = poster.messages(request.connection_id)
    assert (message["type"], message["code"], message["turn_id"]) == ("error", "internal_error", request.turn_id)
    assert "send your message again" in message["message"]
    turn = deps.turns.get(request.turn_id)
    assert turn is not None and turn.state is TurnState.CLOSED and turn.outcome == RelayOutcome.FAILED.value
    assert deps.connections.claim_turn(request.connection_id, "t-next")


def test_a_record_without_a_turn_is_logged_and_dropped(deps: GatewayDeps, lambda_context: Any) -> None:
    assert relay_failed.handler({"requestPayload": "nonsense"}, lambda_context) == {"outcome": "invalid_payload"}


def test_a_late_cancel_the_relay_never_passed_on_is_reported_to_the_client(
    deps: GatewayDeps, poster: Any, record: dict[str, Any], lambda_context: Any
) -> None:
    late = LateCancel(
        turn_id="t-heard",
        session_id="s" * 40,
        played_ms=900,
        connection_id="conn-late",
        connections_endpoint="https://abc123defg.execute-api.us-east-1.amazonaws.com/live",
    )
    record["requestPayload"] = late.to_json()
    assert relay_failed.handler(record, lambda_context) == {"outcome": "late_cancel_failed"}
    [message] = poster.messages("conn-late")
    assert (message["type"], message["code"], message["turn_id"]) == ("error", "agent_unavailable", "t-heard")
