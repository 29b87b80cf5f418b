"""One turn after another on one connection, through the real handlers and relays (moto DynamoDB, relays on
threads, the scripted agent): a client that sends its next ``sendMessage`` the instant the previous turn's terminal
message reaches it is always accepted (docs/client-protocol.md §2). The client here reacts while the relay is still
inside the post of that terminal, the earliest moment any client could."""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import pytest

from relay_core.agent.events import AgentEnd, AgentPayload, AgentStart, TextDelta
from relay_functions.gateway import cancel, connect, send_message
from relay_functions.gateway.deps import GatewayDeps, set_process_deps

CONN = "conn-handover"
USER = "user-handover"
TERMINALS = ("agent_end", "error")


@dataclass
class ReactingClient:
    """Stands in for @connections and the client behind it: every message goes into :attr:`inbox`; the post of a
    terminal message returns only once the client has reacted to it (:meth:`reacted`)."""

    agent: Any = None
    """The scripted agent behind the relays (``gw.FakeAgent``)."""
    inbox: queue.Queue[tuple[dict[str, Any], threading.Event | None]] = field(default_factory=queue.Queue)
    received: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    reacting: bool = True
    """False once the test is over: posts no longer wait for the client."""

    def post(self, connection_id: str, message: str) -> bool:
        assert connection_id == CONN
        obj = json.loads(message)
        with self.lock:
            self.received.append(obj)
        if "seq" in obj and obj["type"] in TERMINALS and self.reacting:
            handled = threading.Event()
            self.inbox.put((obj, handled))
            for _ in range(300):  # up to 15 s
                if handled.wait(0.05) or not self.reacting:
                    break
            else:
                raise AssertionError("the client never reacted to the terminal")
        else:
            self.inbox.put((obj, None))
        return True

    def stop(self) -> None:
        """Stop reacting: release every post still waiting for the client."""
        self.reacting = False
        while not self.inbox.empty():
            _message, handled = self.inbox.get_nowait()
            if handled is not None:
                handled.set()

    def next(self) -> tuple[dict[str, Any], threading.Event | None]:
        return self.inbox.get(timeout=15)

    def until(self, wanted: Callable[[dict[str, Any]], bool]) -> tuple[dict[str, Any], threading.Event | None]:
        """The next message ``wanted`` accepts (the ones before it are read and dropped)."""
        message, handled = self.next()
        while not wanted(message):
            assert handled is None, f"a terminal arrived first: {message}"
            message, handled = self.next()
        return message, handled


@pytest.fixture
def client(dynamodb: Any, gw: ModuleType, lambda_context: Any, relay_threads: Any) -> Any:
    poster = ReactingClient()

    def on_open(stream: Any, payload: AgentPayload) -> None:
        turn_id = payload.request_id or ""
        if payload.prompt.startswith("cancel me"):  # runs until the client's cancel ends it
            stream.push(gw.sse(AgentStart(turn_id), TextDelta(turn_id, 0, "A long story begins.")))
        else:
            stream.push(gw.sse(AgentStart(turn_id), TextDelta(turn_id, 0, "Hi."), AgentEnd(turn_id)))
            stream.end()

    settings = gw.make_settings(turns_per_minute=1000)
    poster.agent = gw.FakeAgent(on_open=on_open)
    deps = GatewayDeps(settings=settings, dynamodb=dynamodb, agent=poster.agent)
    deps.poster_factory = lambda _url: poster
    set_process_deps(deps)
    event = gw.with_connection(gw.load_event("connect.json"), CONN, USER)
    assert connect.handler(event, lambda_context) == {"statusCode": 200}
    yield poster
    poster.stop()
    relay_threads.join()
    set_process_deps(None)


def send(gw: ModuleType, context: Any, route: Callable[..., Any], body: dict[str, Any]) -> None:
    assert route(gw.message_event(body["action"], body, connection_id=CONN), context) == {"statusCode": 200}


def test_fifty_turns_back_to_back_each_sent_on_the_previous_terminal_are_all_accepted(
    client: ReactingClient, gw: ModuleType, lambda_context: Any, relay_threads: Any
) -> None:
    turns = [f"t-{n:02d}" for n in range(50)]
    cancelled = {turn_id for n, turn_id in enumerate(turns) if n % 3 == 1}  # completed and cancelled, mixed
    ends: dict[str, str] = {}

    def start(turn_id: str) -> None:
        prompt = "cancel me, " + turn_id if turn_id in cancelled else "hello"
        send(gw, lambda_context, send_message.handler, {"action": "sendMessage", "prompt": prompt, "turn_id": turn_id})

    start(turns[0])
    while len(ends) < len(turns):
        message, handled = client.next()
        if message["type"] == "error" and "seq" not in message:
            pytest.fail(f"a turn was refused: {message}")
        if message["type"] == "agent_start" and message["turn_id"] in cancelled:
            send(gw, lambda_context, cancel.handler, {"action": "cancel", "turn_id": message["turn_id"]})
        if handled is not None:  # the terminal: the relay waits inside its post while the next turn starts
            ends[message["turn_id"]] = message.get("status", message.get("code", ""))
            index = turns.index(message["turn_id"])
            if index + 1 < len(turns):
                start(turns[index + 1])
            handled.set()
    accepted = [m["turn_id"] for m in client.received if m["type"] == "turn_accepted"]
    assert accepted == turns
    assert ends == {t: "cancelled" if t in cancelled else "completed" for t in turns}
    relay_threads.join()


def test_cancel_ends_the_turn_sooner_and_its_terminal_frees_the_connection(
    client: ReactingClient, gw: ModuleType, lambda_context: Any, relay_threads: Any
) -> None:
    """What "or cancel" in §2 promises: a ``cancel`` does not free the connection by itself (a ``sendMessage`` sent
    after it, before the turn's end, is refused ``turn_in_progress`` and the running turn carries on); it makes the
    turn end at once, and the connection is free the moment its terminal ``agent_end`` (cancelled) arrives."""
    client.agent.honour_cancel = False  # the agent takes its time to stop: the test ends the stream itself
    send(gw, lambda_context, send_message.handler, {"action": "sendMessage", "prompt": "cancel me", "turn_id": "t-a"})
    client.until(lambda m: m["type"] == "agent_start")
    send(gw, lambda_context, cancel.handler, {"action": "cancel", "turn_id": "t-a"})
    send(gw, lambda_context, send_message.handler, {"action": "sendMessage", "prompt": "hello", "turn_id": "t-b"})
    refused, _ = client.until(lambda m: m["type"] == "error")
    assert (refused["code"], refused["turn_id"], "seq" in refused) == ("turn_in_progress", "t-b", False)
    gw.wait_until(lambda: [turn for _session, turn in client.agent.cancels] == ["t-a"])  # the cancel reached it
    client.agent.stream_of("t-a").push(gw.sse(AgentEnd("t-a", status="cancelled")))
    message, handled = client.until(lambda m: "seq" in m and m["type"] in TERMINALS)
    assert (message["type"], message["turn_id"], message["status"]) == ("agent_end", "t-a", "cancelled")
    assert handled is not None
    send(gw, lambda_context, send_message.handler, {"action": "sendMessage", "prompt": "hello", "turn_id": "t-c"})
    handled.set()
    assert client.until(lambda m: m["type"] == "turn_accepted")[0] == {"type": "turn_accepted", "turn_id": "t-c"}
