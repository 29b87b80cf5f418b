"""Property tests of the message routes through their Lambda handlers (moto DynamoDB; the relay run for real, in a
thread, against the scripted agent): whatever frame a client sends to whichever route, and whatever valid messages
two users send in whatever order, nobody gets an internal error, no turn is left running without a client, and no
message of one user's turn reaches another user's connection."""

from __future__ import annotations

import base64
import itertools
import json
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from relay_core.agent.events import AgentEnd, AgentPayload, AgentStart, TextDelta
from relay_functions.gateway import cancel, connect, default, disconnect, resume, send_message
from relay_functions.gateway.deps import GatewayDeps, set_process_deps
from relay_functions.gateway.turns import TurnState, TurnStore

ROUTES: dict[str, Callable[[dict[str, Any], Any], Any]] = {
    "$default": default.handler,
    "sendMessage": send_message.handler,
    "cancel": cancel.handler,
    "resume": resume.handler,
}
"""Every message route (``$connect``/``$disconnect`` take no body)."""


def property_settings(max_examples: int) -> settings:
    """Examples share the test's moto tables (each uses ids of its own), so function-scoped fixtures are fine."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


_examples = itertools.count()


def binary_event(gw: ModuleType, route: str, data: bytes, connection_id: str) -> dict[str, Any]:
    """A MESSAGE event for a binary frame, as API Gateway delivers one: the body base64, ``isBase64Encoded``."""
    event: dict[str, Any] = gw.message_event(route, "", connection_id=connection_id)
    event["body"] = base64.b64encode(data).decode("ascii")
    event["isBase64Encoded"] = True
    return event


@pytest.fixture
def one_connection(deps: GatewayDeps, gw: ModuleType, lambda_context: Any) -> str:
    connection_id = "conn-frames"
    event = gw.with_connection(gw.load_event("connect.json"), connection_id, "user-frames")
    assert connect.handler(event, lambda_context) == {"statusCode": 200}
    return connection_id


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_a_binary_frame_that_is_not_utf8_is_invalid_json_on_every_route(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any, one_connection: str, route: str
) -> None:
    assert ROUTES[route](binary_event(gw, route, b"\xff\xfe{", one_connection), lambda_context) == {"statusCode": 200}
    [error] = gw.posted(one_connection)
    assert error["type"] == "error" and error["code"] == "invalid_json" and "UTF-8" in error["message"]
    assert "seq" not in error
    action = "cancel" if route == "$default" else route
    body = {"action": action, "prompt": "hi", "turn_id": "t-binary", "after_seq": -1}
    ROUTES[route](binary_event(gw, route, json.dumps(body).encode(), one_connection), lambda_context)
    answer = gw.posted(one_connection)[-1]  # a binary frame of UTF-8 JSON is a message like any other
    assert answer["type"] == "turn_accepted" if action == "sendMessage" else answer["code"] == "unknown_turn"


@property_settings(200)
@given(route=st.sampled_from(sorted(ROUTES)), data=st.binary(max_size=300))
def test_any_binary_frame_on_any_route_is_answered_without_an_internal_error(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any, one_connection: str, route: str, data: bytes
) -> None:
    before = len(gw.posted(one_connection))
    assert ROUTES[route](binary_event(gw, route, data, one_connection), lambda_context) == {"statusCode": 200}
    answers = gw.posted(one_connection)[before:]
    assert [a["type"] for a in answers] == ["error"]
    assert answers[0]["code"] != "internal_error" and "seq" not in answers[0]


FIELD = st.one_of(st.text(max_size=30), st.integers(), st.none(), st.booleans())


@property_settings(200)
@given(
    route=st.sampled_from(sorted(ROUTES)),
    text=st.one_of(
        st.text(max_size=200),
        st.builds(json.dumps, st.dictionaries(st.sampled_from(["action", "turn_id", "after_seq", "prompt"]), FIELD)),
        st.builds(lambda a: json.dumps({"action": a}), st.sampled_from(["sendMessage", "cancel", "resume", "nope"])),
    ),
)
def test_any_text_frame_on_any_route_is_answered_without_an_internal_error(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any, one_connection: str, route: str, text: str
) -> None:
    before = len(gw.posted(one_connection))
    assert ROUTES[route](gw.message_event(route, text, connection_id=one_connection), lambda_context) == {
        "statusCode": 200
    }
    answers = gw.posted(one_connection)[before:]
    assert all(a["type"] == "error" and a["code"] != "internal_error" and "seq" not in a for a in answers), answers
    assert len(answers) == 1  # nothing in these frames starts a turn: each is rejected exactly once


# --- valid messages in arbitrary orders ----------------------------------------------------------------------

CONNECTIONS = ("a1", "a2", "b1")
"""Two connections of user A, one of user B."""
TURNS = ("t0", "t1", "t2", "t-unknown")
"""Turn ids the clients name; any of them may be sent first by either user, or never be started at all."""

Op = tuple[Any, ...]
connection_index = st.sampled_from(CONNECTIONS)
turn_index = st.sampled_from(TURNS)
ops = st.lists(
    st.one_of(
        st.tuples(st.just("send"), connection_index, turn_index),
        st.tuples(st.just("cancel"), connection_index, st.one_of(st.none(), turn_index), st.sampled_from([None, 700])),
        st.tuples(st.just("resume"), connection_index, turn_index, st.sampled_from([-1, 0, 1, 5])),
        st.tuples(st.just("finish"), turn_index),
        st.tuples(st.just("reconnect"), connection_index),
    ),
    min_size=1,
    max_size=12,
)


@dataclass
class World:
    """One example's users, connections (current ids by name), agent and running relays."""

    n: int
    gw: ModuleType
    deps: GatewayDeps
    context: Any
    agent: Any
    relays: Any
    """The relay threads of every example (:class:`conftest.RelayThreads`)."""
    live: dict[str, str] = field(default_factory=dict)
    """Connection name → its current connection id."""
    users: dict[str, str] = field(default_factory=dict)
    """Connection id (every one ever opened) → its user."""
    statuses: list[Any] = field(default_factory=list)
    generation: itertools.count[int] = field(default_factory=itertools.count)
    finishing: bool = False
    """The script is over: every agent turn, open or still to be opened, ends at once."""

    def user_of(self, name: str) -> str:
        return f"user-{self.n}-{name[0]}"

    def turn(self, name: str) -> str:
        return f"e{self.n}-{name}"

    def open(self, name: str) -> None:
        connection_id = f"c{self.n}-{name}-{next(self.generation)}"
        event = self.gw.with_connection(self.gw.load_event("connect.json"), connection_id, self.user_of(name))
        assert connect.handler(event, self.context) == {"statusCode": 200}
        self.live[name] = connection_id
        self.users[connection_id] = self.user_of(name)

    def message(self, route: str, name: str, body: dict[str, Any]) -> None:
        event = self.gw.message_event(route, body, connection_id=self.live[name])
        self.statuses.append(ROUTES[route](event, self.context))

    def apply(self, op: Op) -> None:
        kind = op[0]
        if kind == "send":
            self.message("sendMessage", op[1], {"action": "sendMessage", "prompt": "hi", "turn_id": self.turn(op[2])})
        elif kind == "cancel":
            body: dict[str, Any] = {"action": "cancel"}
            if op[2] is not None:
                body["turn_id"] = self.turn(op[2])
            if op[3] is not None:
                body["played_ms"] = op[3]
            self.message("cancel", op[1], body)
        elif kind == "resume":
            self.message("resume", op[1], {"action": "resume", "turn_id": self.turn(op[2]), "after_seq": op[3]})
        elif kind == "finish":
            self.finish(self.turn(op[1]))
        elif kind == "reconnect":
            gone = self.live[op[1]]
            self.poster.gone.add(gone)
            event = self.gw.load_event("disconnect.json")
            event["requestContext"]["connectionId"] = gone
            assert disconnect.handler(event, self.context) == {"statusCode": 200}
            self.open(op[1])

    @property
    def poster(self) -> Any:
        return self.deps.poster("unused")

    def finish(self, turn_id: str) -> None:
        for stream, payload in zip(self.agent.streams, self.agent.payloads, strict=True):
            if payload.request_id == turn_id:
                stream.push(self.gw.sse(TextDelta(turn_id, 0, "Hi there."), AgentEnd(turn_id)))
                stream.end()


@pytest.fixture
def worlds(dynamodb: Any, gw: ModuleType, lambda_context: Any, relay_threads: Any) -> Iterator[Callable[[], World]]:
    made: list[World] = []

    def make() -> World:
        settings = gw.make_settings(resume_window_s=1.0, turns_per_minute=1000)
        poster = gw.RecordingPoster()

        def on_open(stream: Any, payload: AgentPayload) -> None:
            turn_id = payload.request_id or ""
            stream.push(gw.sse(AgentStart(turn_id)))
            if made[-1].finishing:  # a relay that opens its agent turn after the script: the turn ends at once
                made[-1].finish(turn_id)

        agent = gw.FakeAgent(on_open=on_open)
        built = GatewayDeps(settings=settings, dynamodb=dynamodb, agent=agent, poster_factory=lambda _url: poster)
        import boto3  # noqa: PLC0415

        built.lambda_client = boto3.client("lambda", region_name=gw.REGION)
        set_process_deps(built)
        world = World(next(_examples), gw, built, lambda_context, agent, relay_threads)
        made.append(world)
        for name in CONNECTIONS:
            world.open(name)
        return world

    yield make
    set_process_deps(None)


RESUME_DURING_THE_CLOSE: list[Op] = [
    ("send", "a1", "t1"),
    ("send", "a1", "t0"),
    ("cancel", "a1", None, None),
    ("finish", "t1"),
    ("resume", "a2", "t1", -1),
]
"""A script this property once failed on: the resume's switch of the turn and the relay's close of its record reach
the turns table at the same moment; the resumed connection a2 must end up free whichever write goes first."""


@example(script=RESUME_DURING_THE_CLOSE)
@property_settings(40)
@given(script=ops)
def test_valid_messages_in_any_order_on_two_users_connections(worlds: Callable[[], World], script: list[Op]) -> None:
    check_script(worlds(), script)


def test_a_resume_that_meets_the_relays_close_leaves_no_connection_claimed(
    worlds: Callable[[], World], gw: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The resume's conditional switch and the relay's conditional close start together (each waits for the other
    at its first call): whichever DynamoDB applies first, the other sees it, and a2 is left free."""
    both = threading.Barrier(2, timeout=gw.DEADLINE_S)
    first_call: set[str] = set()

    def meeting(name: str, write: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(self: TurnStore, *args: Any, **kwargs: Any) -> Any:
            if name not in first_call:
                first_call.add(name)
                both.wait()  # a broken barrier (the other write never came) fails the test
            return write(self, *args, **kwargs)

        return wrapped

    monkeypatch.setattr(TurnStore, "resume", meeting("resume", TurnStore.resume))
    monkeypatch.setattr(TurnStore, "close", meeting("close", TurnStore.close))
    switch_s = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # the two threads take turns every few bytecodes: the writes interleave finely
    try:
        check_script(worlds(), RESUME_DURING_THE_CLOSE)
    finally:
        sys.setswitchinterval(switch_s)
    assert first_call == {"resume", "close"}


def check_script(world: World, script: list[Op]) -> None:
    """Play ``script``, end every agent turn, wait for the relays, and check what every test of a script asserts."""
    for op in script:
        world.apply(op)
    world.finishing = True
    for payload in list(world.agent.payloads):
        world.finish(payload.request_id or "")  # every agent turn ends (a stream already over ignores it)
    world.relays.join()

    assert all(status == {"statusCode": 200} for status in world.statuses)
    owners: dict[str, str] = {}
    cancelled = {request_id for _session, request_id in world.agent.cancels}
    for payload in world.agent.payloads:
        record = world.deps.turns.get(payload.request_id)
        assert record is not None
        owners[payload.request_id] = record.user_id
        assert record.state == TurnState.CLOSED, record  # the relay is gone: nothing is left running
        if record.outcome == "abandoned":
            assert payload.request_id in cancelled, "a turn nobody listens to any more is cancelled at the agent"
    for connection_id in world.users:
        held = world.deps.connections.get(connection_id)
        assert held is None or held.active_turn is None, f"{connection_id} is still claimed by {held.active_turn}"
    for connection_id, user in world.users.items():
        for message in world.poster.messages(connection_id):
            assert message.get("code") != "internal_error", message
            if "seq" in message or message["type"] == "turn_accepted":
                assert owners.get(message["turn_id"], user) == user, f"{message} reached another user's connection"
