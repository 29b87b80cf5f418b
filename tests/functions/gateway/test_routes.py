"""The message routes through their Lambda handlers, over recorded API Gateway events: moto DynamoDB, moto's
@connections API (what the client receives) and moto Lambda (the relay's asynchronous invocation)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import pytest
from moto.awslambda.exceptions import UnknownFunctionException
from moto.awslambda_simple.models import LambdaSimpleBackend

from relay_core.agent.events import AgentEnd, AgentStart, TextDelta
from relay_core.client.messages import VALID_ACTIONS_TEXT
from relay_core.relay.turn_record import RelayOutcome, TurnState
from relay_functions.gateway import authorizer, cancel, connect, default, relay, resume, send_message
from relay_functions.gateway.agent_runtime import AgentUnavailableError
from relay_functions.gateway.deps import GatewayDeps
from relay_functions.gateway.relay_request import LateCancel, RelayRequest

CONN = "L0SM9cOFvHcCIhw="  # the recorded events' connection id
USER = "3f6c1d2e-7a8b-4c9d-8e0f-1a2b3c4d5e6f"  # the recorded $connect event's user


@dataclass
class Invocations:
    """What moto's Lambda received (function, invocation type, payload)."""

    calls: list[tuple[str, str | None, dict[str, Any]]] = field(default_factory=list)
    fail: bool = False

    def requests(self) -> list[RelayRequest]:
        return [RelayRequest.from_json(payload) for _name, _kind, payload in self.calls]


@pytest.fixture
def invocations(monkeypatch: pytest.MonkeyPatch) -> Invocations:
    recorded = Invocations()

    def invoke(self: Any, function_name: str, qualifier: Any, body: Any, headers: Any, response_headers: Any) -> bytes:
        if recorded.fail:
            raise UnknownFunctionException(function_name)
        recorded.calls.append((function_name, headers.get("X-Amz-Invocation-Type"), json.loads(body)))
        return b""

    monkeypatch.setattr(LambdaSimpleBackend, "invoke", invoke)
    return recorded


@pytest.fixture
def connected(deps: GatewayDeps, gw: ModuleType, lambda_context: Any) -> str:
    """The recorded $connect went through: the connection is registered for USER."""
    assert connect.handler(gw.load_event("connect.json"), lambda_context) == {"statusCode": 200}
    return CONN


def send(gw: ModuleType, lambda_context: Any, body: dict[str, Any] | str | None = None, **kwargs: Any) -> Any:
    event = gw.load_event("send_message.json")
    if body is not None:
        event["body"] = body if isinstance(body, str) else json.dumps(body)
    event["requestContext"]["connectionId"] = kwargs.get("connection_id", CONN)
    return send_message.handler(event, lambda_context)


def errors(gw: ModuleType, connection_id: str = CONN) -> list[dict[str, Any]]:
    return [m for m in gw.posted(connection_id) if m["type"] == "error"]


def test_send_message_accepts_and_hands_the_turn_to_the_relay(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any, connected: str, invocations: Invocations
) -> None:
    assert send(gw, lambda_context) == {"statusCode": 200}
    [accepted] = gw.posted(CONN)
    assert accepted["type"] == "turn_accepted"
    [(function, kind, _payload)] = invocations.calls
    assert (function, kind) == (deps.settings.relay_function_name, "Event")
    [request] = invocations.requests()
    assert request.turn_id == accepted["turn_id"]
    assert (request.connection_id, request.user_id) == (CONN, USER)
    assert request.connections_endpoint == gw.ENDPOINT
    assert (
        request.agent.prompt == "Tell me about the sea in two sentences." and request.agent.options.voice == "jf_alpha"
    )
    assert request.agent.request_id == request.turn_id
    connection = deps.connections.get(CONN)
    assert connection is not None and connection.active_turn == request.turn_id
    assert request.session_id == connection.session_id
    turn = deps.turns.get(request.turn_id)
    assert turn is not None and turn.state == TurnState.RUNNING and turn.user_id == USER


def test_a_second_turn_while_one_runs_is_refused(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any, connected: str, invocations: Invocations
) -> None:
    send(gw, lambda_context)
    send(gw, lambda_context, {"action": "sendMessage", "prompt": "and another", "turn_id": "t-mine-2"})
    [error] = errors(gw)
    assert error["code"] == "turn_in_progress" and error["turn_id"] == "t-mine-2" and "seq" not in error
    assert len(invocations.calls) == 1
    assert deps.turns.get("t-mine-2") is None


def test_turns_per_minute_are_limited_per_user(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any, connected: str, invocations: Invocations
) -> None:
    deps.settings = gw.make_settings(turns_per_minute=2)  # before the rate limiter is first built
    for n in range(3):
        send(gw, lambda_context, {"action": "sendMessage", "prompt": f"turn {n}", "turn_id": f"t-{n}"})
        deps.connections.release_turn(CONN, f"t-{n}")  # the relay finished it
    [error] = errors(gw)
    assert (
        error["code"] == "rate_limited" and error["turn_id"] == "t-2" and "at most 2 turns a minute" in error["message"]
    )
    assert len(invocations.calls) == 2
    connection = deps.connections.get(CONN)
    assert connection is not None and connection.active_turn is None  # a refusal leaves nothing claimed


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ("{not json", "invalid_json"),
        ({"action": "sendMessage"}, "invalid_field"),
        ({"action": "sendMessage", "prompt": "hi", "speed": 9}, "invalid_field"),
        ({"action": "sendMessage", "prompt": "hi", "mode": "telepathy"}, "invalid_field"),
        ({"action": "sendMessage", "prompt": "hi", "turn_id": "no spaces allowed"}, "invalid_field"),
        ({"action": "sendMessage", "prompt": "x" * 20_001}, "limit_exceeded"),
    ],
)
def test_bad_messages_get_a_clear_error_and_change_nothing(
    deps: GatewayDeps,
    gw: ModuleType,
    lambda_context: Any,
    connected: str,
    invocations: Invocations,
    body: Any,
    code: str,
) -> None:
    assert send(gw, lambda_context, body) == {"statusCode": 200}
    [error] = gw.posted(CONN)
    assert error["type"] == "error" and error["code"] == code and error["message"]
    assert "Traceback" not in error["message"]
    assert invocations.calls == []
    connection = deps.connections.get(CONN)
    assert connection is not None and connection.active_turn is None
    send(gw, lambda_context)  # the connection is still usable
    assert gw.posted(CONN)[-1]["type"] == "turn_accepted"


def test_an_unregistered_connection_is_told_to_reconnect(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any, invocations: Invocations
) -> None:
    send(gw, lambda_context)
    [error] = errors(gw)
    assert error["code"] == "unauthorized"
    assert invocations.calls == []


def test_a_relay_that_cannot_be_invoked_is_reported_and_releases_the_connection(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any, connected: str, invocations: Invocations
) -> None:
    invocations.fail = True
    send(gw, lambda_context, {"action": "sendMessage", "prompt": "hi", "turn_id": "t-x"})
    assert [m["type"] for m in gw.posted(CONN)] == ["turn_accepted", "error"]
    assert errors(gw)[0]["code"] == "agent_unavailable"
    turn = deps.turns.get("t-x")
    assert turn is not None and turn.state == TurnState.CLOSED
    connection = deps.connections.get(CONN)
    assert connection is not None and connection.active_turn is None


@pytest.mark.parametrize("event_name", ["default_unknown_action.json", "default_not_json.json"])
def test_default_names_the_valid_actions(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any, connected: str, event_name: str
) -> None:
    assert default.handler(gw.load_event(event_name), lambda_context) == {"statusCode": 200}
    [error] = gw.posted(CONN)
    if event_name == "default_not_json.json":
        assert error["code"] == "invalid_json"
    else:
        assert error["code"] == "unknown_action" and VALID_ACTIONS_TEXT in error["message"]


def test_default_serves_a_valid_action_that_reached_it(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any, connected: str, invocations: Invocations
) -> None:
    event = gw.message_event("$default", {"action": "sendMessage", "prompt": "hi"}, connection_id=CONN)
    default.handler(event, lambda_context)
    assert gw.posted(CONN)[0]["type"] == "turn_accepted"
    assert len(invocations.calls) == 1


def test_cancel_flags_the_running_turn(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any, connected: str, invocations: Invocations
) -> None:
    send(gw, lambda_context, {"action": "sendMessage", "prompt": "hi", "turn_id": "t-c"})
    assert cancel.handler(gw.load_event("cancel.json"), lambda_context) == {"statusCode": 200}
    turn = deps.turns.get("t-c")
    assert turn is not None and turn.cancel_requested
    assert errors(gw) == []


def test_cancel_of_no_or_someone_elses_turn_is_unknown_turn(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any, connected: str
) -> None:
    cancel.handler(gw.load_event("cancel.json"), lambda_context)  # nothing runs
    deps.turns.create("t-other", user_id="someone-else", session_id="s" * 40, connection_id="conn-z")
    cancel.handler(
        gw.message_event("cancel", {"action": "cancel", "turn_id": "t-other"}, connection_id=CONN), lambda_context
    )
    assert [e["code"] for e in errors(gw)] == ["unknown_turn", "unknown_turn"]
    turn = deps.turns.get("t-other")
    assert turn is not None and not turn.cancel_requested


def resume_event(gw: ModuleType, turn_id: str, after_seq: int, connection_id: str) -> dict[str, Any]:
    body = {"action": "resume", "turn_id": turn_id, "after_seq": after_seq}
    event: dict[str, Any] = gw.message_event("resume", body, connection_id=connection_id)
    return event


def test_resume_switches_a_running_turn_to_the_new_connection(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any, connected: str
) -> None:
    deps.connections.put("conn-old", user_id=USER, session_id="s" * 40)
    deps.turns.create("t-r", user_id=USER, session_id="s" * 40, connection_id="conn-old")
    deps.turns.mark_detached("t-r", connection_id="conn-old")
    assert resume.handler(resume_event(gw, "t-r", 4, CONN), lambda_context) == {"statusCode": 200}
    turn = deps.turns.get("t-r")
    assert turn is not None
    assert (turn.connection_id, turn.resume_after_seq, turn.resume_count, turn.detached_at) == (CONN, 4, 1, None)
    connection = deps.connections.get(CONN)
    assert connection is not None and connection.active_turn == "t-r"
    assert errors(gw) == []  # the relay answers (turn_accepted, then the replay)


def test_resume_frees_the_connection_the_turn_leaves(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any, connected: str
) -> None:
    """A client back on a new connection takes its turn over: the old connection (still open, or not yet known to
    be gone) no longer runs it, so it can start a turn again; and this holds before any relay has run."""
    deps.connections.put("conn-old", user_id=USER, session_id="s" * 40)
    assert deps.connections.claim_turn("conn-old", "t-moved")
    deps.turns.create("t-moved", user_id=USER, session_id="s" * 40, connection_id="conn-old")
    assert resume.handler(resume_event(gw, "t-moved", -1, CONN), lambda_context) == {"statusCode": 200}
    old = deps.connections.get("conn-old")
    assert old is not None and old.active_turn is None
    new = deps.connections.get(CONN)
    assert new is not None and new.active_turn == "t-moved"


def test_resume_on_the_same_connection_fills_a_gap(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any, connected: str, invocations: Invocations
) -> None:
    send(gw, lambda_context, {"action": "sendMessage", "prompt": "hi", "turn_id": "t-gap"})
    resume.handler(resume_event(gw, "t-gap", 3, CONN), lambda_context)
    assert errors(gw) == []
    turn = deps.turns.get("t-gap")
    assert turn is not None and (turn.connection_id, turn.resume_after_seq, turn.resume_count) == (CONN, 3, 1)
    # but another turn still cannot take over the connection
    send(gw, lambda_context, {"action": "sendMessage", "prompt": "hi", "turn_id": "t-other"})
    assert [e["code"] for e in errors(gw)] == ["turn_in_progress"]
    # and a resend of the running turn's id is refused without releasing the running turn
    send(gw, lambda_context, {"action": "sendMessage", "prompt": "hi", "turn_id": "t-gap"})
    connection = deps.connections.get(CONN)
    assert connection is not None and connection.active_turn == "t-gap"


def test_resume_refusals(deps: GatewayDeps, gw: ModuleType, lambda_context: Any, connected: str) -> None:
    deps.turns.create("t-theirs", user_id="someone-else", session_id="s" * 40, connection_id="conn-z")
    deps.turns.create("t-done", user_id=USER, session_id="s" * 40, connection_id="conn-z")
    deps.turns.close("t-done", seen_resume_count=0)
    deps.turns.create("t-late", user_id=USER, session_id="s" * 40, connection_id="conn-z")
    deps.db.update_item(  # detached 31 s ago: past the 30 s window
        TableName=deps.settings.turns_table,
        Key={"pk": {"S": "t-late"}},
        UpdateExpression="SET detached_at = :t",
        ExpressionAttributeValues={":t": {"N": str(deps.clock.now() - 31)}},
    )
    for turn_id in ("t-missing", "t-theirs", "t-done", "t-late"):
        resume.handler(resume_event(gw, turn_id, -1, CONN), lambda_context)
    assert [(e["code"], e["turn_id"]) for e in errors(gw)] == [
        ("unknown_turn", "t-missing"),
        ("unknown_turn", "t-theirs"),
        ("resume_expired", "t-done"),
        ("resume_expired", "t-late"),
    ]
    connection = deps.connections.get(CONN)
    assert connection is not None and connection.active_turn is None


def test_the_recorded_resume_event_parses_and_is_answered(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any, connected: str
) -> None:
    resume.handler(gw.load_event("resume.json"), lambda_context)
    assert [e["code"] for e in errors(gw)] == ["unknown_turn"]


def test_connect_send_relay_and_cancel_end_to_end(
    deps: GatewayDeps,
    gw: ModuleType,
    lambda_context: Any,
    invocations: Invocations,
    issuer: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The handlers in the order API Gateway and Lambda call them; the agent is the scripted stand-in."""
    deps.settings = gw.make_settings(jwks_url=issuer.jwks_url)
    token = issuer.token(sub="user-e2e")
    auth_event = gw.load_event("authorizer_request.json", queryStringParameters={"token": token})
    policy = authorizer.handler(auth_event, lambda_context)
    connect_event = gw.load_event("connect.json")
    connect_event["requestContext"]["authorizer"] = {"principalId": policy["principalId"], **policy["context"]}
    assert connect.handler(connect_event, lambda_context) == {"statusCode": 200}

    # a turn that runs to its end
    agent = gw.FakeAgent()
    deps.agent = agent
    send(gw, lambda_context, {"action": "sendMessage", "prompt": "Say hi.", "turn_id": "t-e2e-1"})
    agent.on_open = lambda stream, payload: (
        stream.push(gw.sse(AgentStart("t-e2e-1"), TextDelta("t-e2e-1", 0, "Hi!"), AgentEnd("t-e2e-1"))),
        stream.end(),
    )
    assert relay.handler(invocations.calls[0][2], lambda_context) == {"outcome": "completed", "messages": 3}
    received = gw.posted(CONN)
    assert [(m["type"], m.get("seq")) for m in received] == [
        ("turn_accepted", None),
        ("agent_start", 0),
        ("text_delta", 1),
        ("agent_end", 2),
    ]

    # a turn the user interrupts
    agent.on_open = lambda stream, payload: stream.push(gw.sse(AgentStart("t-e2e-2")))
    send(gw, lambda_context, {"action": "sendMessage", "prompt": "Tell me a long story.", "turn_id": "t-e2e-2"})
    outcome: list[dict[str, Any]] = []
    worker = threading.Thread(target=lambda: outcome.append(relay.handler(invocations.calls[1][2], lambda_context)))
    worker.start()
    gw.wait_until(lambda: any(m.get("turn_id") == "t-e2e-2" and m["type"] == "agent_start" for m in gw.posted(CONN)))
    cancel.handler(gw.message_event("cancel", {"action": "cancel"}, connection_id=CONN), lambda_context)
    worker.join(timeout=15)
    assert outcome == [{"outcome": "cancelled", "messages": 2}]
    assert gw.posted(CONN)[-1] == {
        "turn_id": "t-e2e-2",
        "seq": 1,
        "status": "cancelled",
        "text_chars": 0,
        "sentences": 0,
        "elapsed_s": 0.0,
        "type": "agent_end",
    }
    assert agent.cancels[-1][1] == "t-e2e-2"
    logs = capsys.readouterr().out
    assert token not in logs and "Tell me a long story." not in logs  # no tokens, no prompts in the logs
    assert '"Turns"' in logs and '"MessagesPosted"' in logs


def test_send_message_passes_the_audio_choice_into_the_agent_payload(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any, connected: str, invocations: Invocations
) -> None:
    send(gw, lambda_context, {"action": "sendMessage", "prompt": "hi", "turn_id": "t-pcm"})
    deps.connections.release_turn(CONN, "t-pcm")
    send(gw, lambda_context, {"action": "sendMessage", "prompt": "hi", "turn_id": "t-opus", "audio": "opus"})
    plain, opus = invocations.requests()
    assert (plain.agent.audio.value, opus.agent.audio.value) == ("pcm", "opus")
    assert "audio" not in invocations.calls[0][2]["agent"], "a PCM turn's relay payload is unchanged"
    assert invocations.calls[1][2]["agent"]["audio"] == "opus"
    assert errors(gw) == []


def test_send_message_passes_timings_into_the_agent_payload_only_when_asked(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any, connected: str, invocations: Invocations
) -> None:
    send(gw, lambda_context, {"action": "sendMessage", "prompt": "hi", "turn_id": "t-plain"})
    deps.connections.release_turn(CONN, "t-plain")
    send(gw, lambda_context, {"action": "sendMessage", "prompt": "hi", "turn_id": "t-timed", "timings": True})
    plain, timed = invocations.requests()
    assert (plain.agent.timings, timed.agent.timings) == (False, True)
    assert "timings" not in invocations.calls[0][2]["agent"], "without timings the relay's payload is unchanged"
    assert errors(gw) == []


def test_cancel_records_played_ms_on_the_turn_and_refuses_a_bad_one(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any, connected: str, invocations: Invocations
) -> None:
    send(gw, lambda_context, {"action": "sendMessage", "prompt": "hi", "turn_id": "t-p"})
    bad = gw.message_event("cancel", {"action": "cancel", "turn_id": "t-p", "played_ms": -3}, connection_id=CONN)
    cancel.handler(bad, lambda_context)
    assert [e["code"] for e in errors(gw)] == ["invalid_field"]
    turn = deps.turns.get("t-p")
    assert turn is not None and not turn.cancel_requested and turn.played_ms is None
    good = gw.message_event("cancel", {"action": "cancel", "turn_id": "t-p", "played_ms": 1875}, connection_id=CONN)
    assert cancel.handler(good, lambda_context) == {"statusCode": 200}
    turn = deps.turns.get("t-p")
    assert turn is not None and turn.cancel_requested and turn.played_ms == 1875
    assert len(errors(gw)) == 1


def test_a_late_cancel_is_queued_for_the_relay_and_cancel_never_calls_the_agent(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any, connected: str, invocations: Invocations
) -> None:
    """A runtime session gone cold may take longer to answer than the route may run: cancel only queues the late
    barge-in (InvocationType=Event) for the relay function, which may wait as long as a turn."""

    class ColdAgent:
        def open_turn(self, *, session_id: str, payload: Any) -> Any:
            raise AssertionError("no turn is opened by cancel")

        def cancel(self, *, session_id: str, request_id: str, played_ms: int | None = None) -> list[str]:
            raise AssertionError("the cancel route called the agent itself")

    deps.agent = ColdAgent()
    deps.turns.create("t-done", user_id=USER, session_id="s" * 40, connection_id=CONN)
    deps.turns.end("t-done", outcome=RelayOutcome.COMPLETED)
    body = {"action": "cancel", "turn_id": "t-done", "played_ms": 1500}
    assert cancel.handler(gw.message_event("cancel", body, connection_id=CONN), lambda_context) == {"statusCode": 200}
    [(function, kind, payload)] = invocations.calls
    assert (function, kind) == (deps.settings.relay_function_name, "Event")
    late = LateCancel.from_json(payload)
    assert (late.turn_id, late.session_id, late.played_ms, late.connection_id) == ("t-done", "s" * 40, 1500, CONN)
    assert errors(gw) == []


def test_a_cancel_with_played_ms_after_the_turn_ended_reaches_the_agent_through_the_relay(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any, connected: str, relay_threads: Any
) -> None:
    """The reply is still playing after agent_end: the listener's Stop tells the agent what was heard."""
    agent = deps.agent = gw.FakeAgent(honour_cancel=False)
    session = "s" * 40
    deps.turns.create("t-done", user_id=USER, session_id=session, connection_id=CONN)
    deps.turns.close("t-done", seen_resume_count=0)
    deps.turns.create("t-theirs", user_id="someone-else", session_id="x" * 40, connection_id="conn-z")
    deps.turns.close("t-theirs", seen_resume_count=0)

    def cancel_message(body: dict[str, Any]) -> None:
        cancel.handler(gw.message_event("cancel", {"action": "cancel", **body}, connection_id=CONN), lambda_context)

    cancel_message({"turn_id": "t-done", "played_ms": 1500})
    relay_threads.join()
    assert agent.cancels == [(session, "t-done")] and agent.played_ms == [1500]
    assert errors(gw) == []
    cancel_message({"turn_id": "t-done"})  # nothing to tell the agent: the turn is over
    cancel_message({"turn_id": "t-theirs", "played_ms": 1500})
    relay_threads.join()
    assert [e["code"] for e in errors(gw)] == ["unknown_turn", "unknown_turn"]
    assert agent.cancels == [(session, "t-done")], "someone else's conversation is never touched"


def test_a_late_cancel_the_agent_cannot_take_is_agent_unavailable(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any, connected: str, relay_threads: Any
) -> None:
    class DownAgent:
        def open_turn(self, *, session_id: str, payload: Any) -> Any:
            raise AssertionError("no turn is opened by cancel")

        def cancel(self, *, session_id: str, request_id: str, played_ms: int | None = None) -> list[str]:
            raise AgentUnavailableError("invoke_agent_runtime failed: AccessDeniedException")

    deps.agent = DownAgent()
    deps.turns.create("t-done", user_id=USER, session_id="s" * 40, connection_id=CONN)
    deps.turns.end("t-done", outcome=RelayOutcome.COMPLETED)
    body = {"action": "cancel", "turn_id": "t-done", "played_ms": 10}
    cancel.handler(gw.message_event("cancel", body, connection_id=CONN), lambda_context)
    relay_threads.join()
    [error] = errors(gw)
    assert error["code"] == "agent_unavailable" and "AccessDenied" not in error["message"]
    assert error["turn_id"] == "t-done"
