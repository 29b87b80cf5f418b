"""``newConversation`` through the real handlers (moto DynamoDB, moto @connections, relays on threads, the scripted
agent): the user's next turns, on every connection of theirs and every later one, reach a fresh AgentCore session;
a turn already running keeps its own, to its late barge-in."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from relay_core.agent.conversation_ids import user_session_id_prefix
from relay_core.agent.events import AgentEnd, AgentPayload, AgentStart, TextDelta
from relay_functions.gateway import cancel, connect, default, new_conversation, send_message
from relay_functions.gateway.deps import GatewayDeps

USER = "user-starts-over"


def connect_as(gw: ModuleType, context: Any, connection_id: str, user_id: str = USER) -> None:
    event = gw.with_connection(gw.load_event("connect.json"), connection_id, user_id)
    assert connect.handler(event, context) == {"statusCode": 200}


def start_over(gw: ModuleType, context: Any, connection_id: str) -> None:
    event = gw.with_connection(gw.load_event("new_conversation.json"), connection_id)
    assert new_conversation.handler(event, context) == {"statusCode": 200}


def run_turn(gw: ModuleType, context: Any, relays: Any, connection_id: str, turn_id: str) -> None:
    """A turn that runs to its end on ``connection_id``."""
    body = {"action": "sendMessage", "prompt": f"say {turn_id}", "turn_id": turn_id}
    assert send_message.handler(gw.message_event("sendMessage", body, connection_id=connection_id), context) == {
        "statusCode": 200
    }
    relays.join()
    assert gw.posted(connection_id)[-1]["type"] == "agent_end", gw.posted(connection_id)


def replies_at_once(gw: ModuleType) -> Any:
    """A scripted agent whose turns end at once, except a prompt starting "hold", which runs until cancelled."""

    def on_open(stream: Any, payload: AgentPayload) -> None:
        turn_id = payload.request_id or ""
        stream.push(gw.sse(AgentStart(turn_id), TextDelta(turn_id, 0, "Hi.")))
        if not payload.prompt.startswith("hold"):
            stream.push(gw.sse(AgentEnd(turn_id)))
            stream.end()

    return gw.FakeAgent(on_open=on_open)


def test_the_next_turn_on_every_connection_of_the_user_starts_a_fresh_session(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any, relay_threads: Any
) -> None:
    agent = deps.agent = replies_at_once(gw)
    connect_as(gw, lambda_context, "conn-a")
    connect_as(gw, lambda_context, "conn-b")
    connect_as(gw, lambda_context, "conn-other", user_id="someone-else")
    run_turn(gw, lambda_context, relay_threads, "conn-a", "t-1")
    run_turn(gw, lambda_context, relay_threads, "conn-b", "t-2")
    run_turn(gw, lambda_context, relay_threads, "conn-other", "t-x1")
    first, others = agent.sessions[0], agent.sessions[2]
    assert agent.sessions[1] == first, "one conversation per user, across connections"

    start_over(gw, lambda_context, "conn-b")
    assert gw.posted("conn-b")[-1] == {"type": "conversation_started"}
    assert [m for m in gw.posted("conn-a") if m["type"] == "conversation_started"] == []

    run_turn(gw, lambda_context, relay_threads, "conn-a", "t-3")  # another connection of the user
    fresh = agent.sessions[-1]
    assert fresh != first and fresh.startswith(user_session_id_prefix(USER))
    assert first.startswith(user_session_id_prefix(USER)) and others.startswith(user_session_id_prefix("someone-else"))
    run_turn(gw, lambda_context, relay_threads, "conn-b", "t-4")
    connect_as(gw, lambda_context, "conn-c")  # a later connection
    run_turn(gw, lambda_context, relay_threads, "conn-c", "t-5")
    assert agent.sessions[-2:] == [fresh, fresh]
    run_turn(gw, lambda_context, relay_threads, "conn-other", "t-x2")
    assert agent.sessions[-1] == others, "another user's conversation is not touched"
    assert deps.turns.get("t-1").session_id == first  # type: ignore[union-attr]
    assert deps.turns.get("t-3").session_id == fresh  # type: ignore[union-attr]


def test_a_running_turn_keeps_its_session_to_its_late_barge_in(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any, relay_threads: Any
) -> None:
    agent = deps.agent = replies_at_once(gw)
    connect_as(gw, lambda_context, "conn-a")
    connect_as(gw, lambda_context, "conn-b")
    body = {"action": "sendMessage", "prompt": "hold on", "turn_id": "t-long"}
    send_message.handler(gw.message_event("sendMessage", body, connection_id="conn-a"), lambda_context)
    gw.wait_until(lambda: any(m["type"] == "agent_start" for m in gw.posted("conn-a")))
    old = agent.sessions[0]

    start_over(gw, lambda_context, "conn-b")  # while t-long runs on conn-a
    assert gw.posted("conn-b")[-1] == {"type": "conversation_started"}
    agent.stream_of("t-long").push(gw.sse(TextDelta("t-long", 1, " And more."), AgentEnd("t-long")))
    agent.stream_of("t-long").end()
    relay_threads.join()
    assert gw.posted("conn-a")[-1]["type"] == "agent_end"

    late = {"action": "cancel", "turn_id": "t-long", "played_ms": 800}
    cancel.handler(gw.message_event("cancel", late, connection_id="conn-a"), lambda_context)
    relay_threads.join()
    assert agent.cancels == [(old, "t-long")] and agent.played_ms == [800]
    run_turn(gw, lambda_context, relay_threads, "conn-a", "t-next")
    assert agent.sessions[-1] != old


def test_new_conversation_on_an_unregistered_connection_is_unauthorized_and_changes_nothing(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any
) -> None:
    connect_as(gw, lambda_context, "conn-a")
    before = deps.connections.conversation_session(USER)
    start_over(gw, lambda_context, "conn-never-connected")
    [error] = gw.posted("conn-never-connected")
    assert error["type"] == "error" and error["code"] == "unauthorized" and "seq" not in error
    assert deps.connections.conversation_session(USER) == before


def test_default_serves_it_too(deps: GatewayDeps, gw: ModuleType, lambda_context: Any) -> None:
    """A deployment missing the route still serves the action on ``$default``."""
    connect_as(gw, lambda_context, "conn-a")
    before = deps.connections.conversation_session(USER)
    event = gw.with_connection(gw.load_event("new_conversation.json"), "conn-a")
    event["requestContext"]["routeKey"] = "$default"
    assert default.handler(event, lambda_context) == {"statusCode": 200}
    assert gw.posted("conn-a")[-1] == {"type": "conversation_started"}
    assert deps.connections.conversation_session(USER) != before
