"""$connect / $disconnect over recorded events, and the connections table's conditional writes (moto DynamoDB)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from relay_core import limits
from relay_functions.gateway import connect, disconnect
from relay_functions.gateway.connections import CONVERSATION_TTL_S, ConnectionNotRegisteredError, ConnectionStore
from relay_functions.gateway.deps import GatewayDeps
from relay_functions.gateway.rate_limit import TurnRateLimiter


class SteppedClock:
    def __init__(self, now: float) -> None:
        self.now_s = now

    def now(self) -> float:
        return self.now_s

    def monotonic(self) -> float:
        return self.now_s


def test_connect_records_the_user_and_a_stable_conversation(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any
) -> None:
    first = connect.handler(gw.with_connection(gw.load_event("connect.json"), "conn-a", "user-1"), lambda_context)
    second = connect.handler(gw.with_connection(gw.load_event("connect.json"), "conn-b", "user-1"), lambda_context)
    other = connect.handler(gw.with_connection(gw.load_event("connect.json"), "conn-c", "user-2"), lambda_context)
    assert first == second == other == {"statusCode": 200}
    a, b, c = (deps.connections.get(cid) for cid in ("conn-a", "conn-b", "conn-c"))
    assert a is not None and b is not None and c is not None
    assert (a.user_id, b.user_id, c.user_id) == ("user-1", "user-1", "user-2")
    assert a.session_id == b.session_id != c.session_id
    assert limits.AGENTCORE_SESSION_ID_MIN_CHARS <= len(a.session_id) <= limits.AGENTCORE_SESSION_ID_MAX_CHARS
    item = deps.db.get_item(TableName=deps.settings.connections_table, Key={"pk": {"S": "conn#conn-a"}})["Item"]
    assert int(item["expires_at"]["N"]) - int(float(item["connected_at"]["N"])) == deps.settings.connection_ttl_s


def test_a_new_conversation_session_replaces_the_users_and_renews_its_expiry(deps: GatewayDeps) -> None:
    clock = SteppedClock(1_000_000.0)
    store = ConnectionStore(deps.db, deps.settings.connections_table, ttl_s=60, clock=clock)
    old = store.conversation_session("user-1")
    other = store.conversation_session("user-2")
    clock.now_s += 3600
    fresh = store.new_conversation_session("user-1")
    assert fresh != old and store.conversation_session("user-1") == fresh
    assert limits.AGENTCORE_SESSION_ID_MIN_CHARS <= len(fresh) <= limits.AGENTCORE_SESSION_ID_MAX_CHARS
    assert store.conversation_session("user-2") == other
    item = deps.db.get_item(TableName=deps.settings.connections_table, Key={"pk": {"S": "conversation#user-1"}})
    assert int(item["Item"]["expires_at"]["N"]) == int(clock.now_s) + CONVERSATION_TTL_S


def test_connect_without_an_authorized_user_is_refused(deps: GatewayDeps, gw: ModuleType, lambda_context: Any) -> None:
    event = gw.load_event("connect.json")
    del event["requestContext"]["authorizer"]
    assert connect.handler(event, lambda_context) == {"statusCode": 401}
    assert deps.connections.get(event["requestContext"]["connectionId"]) is None


def test_disconnect_forgets_the_connection_and_detaches_its_turn(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any
) -> None:
    connect.handler(gw.load_event("connect.json"), lambda_context)
    connection_id = gw.load_event("connect.json")["requestContext"]["connectionId"]
    connection = deps.connections.get(connection_id)
    assert connection is not None
    deps.turns.create("t-1", user_id=connection.user_id, session_id=connection.session_id, connection_id=connection_id)
    assert deps.connections.claim_turn(connection_id, "t-1")

    assert disconnect.handler(gw.load_event("disconnect.json"), lambda_context) == {"statusCode": 200}
    assert deps.connections.get(connection_id) is None
    turn = deps.turns.get("t-1")
    assert turn is not None and turn.detached_at is not None
    # an unknown connection (already gone) is not an error
    assert disconnect.handler(gw.load_event("disconnect.json"), lambda_context) == {"statusCode": 200}


def test_one_turn_per_connection(deps: GatewayDeps) -> None:
    deps.connections.put("conn-a", user_id="u", session_id="s" * 40)
    assert deps.connections.claim_turn("conn-a", "t-1")
    assert not deps.connections.claim_turn("conn-a", "t-2")
    deps.connections.release_turn("conn-a", "t-2")  # not the running turn: no effect
    assert not deps.connections.claim_turn("conn-a", "t-2")
    deps.connections.release_turn("conn-a", "t-1")
    assert deps.connections.claim_turn("conn-a", "t-2")
    assert not deps.connections.claim_turn("conn-unknown", "t-3")


def test_claiming_a_new_turn_reads_the_connection_in_the_same_write(deps: GatewayDeps) -> None:
    deps.connections.put("conn-a", user_id="u", session_id="s" * 40)
    claimed = deps.connections.claim_new_turn("conn-a", "t-1")
    assert claimed is not None
    assert (claimed.user_id, claimed.session_id, claimed.active_turn) == ("u", "s" * 40, "t-1")
    assert deps.connections.claim_new_turn("conn-a", "t-2") is None  # t-1 still runs there
    deps.connections.release_turn("conn-a", "t-1")
    again = deps.connections.claim_new_turn("conn-a", "t-2")
    assert again is not None and again.active_turn == "t-2"
    with pytest.raises(ConnectionNotRegisteredError):
        deps.connections.claim_new_turn("conn-unknown", "t-3")
    assert deps.connections.get("conn-unknown") is None  # the failed claim created nothing


def test_rate_limit_counts_turns_per_user_and_minute(deps: GatewayDeps) -> None:
    clock = SteppedClock(1_800_000_000.0)  # the start of a minute
    limiter = TurnRateLimiter(deps.db, deps.settings.connections_table, turns_per_minute=3, clock=clock)
    assert [limiter.try_acquire("u1").allowed for _ in range(4)] == [True, True, True, False]
    assert limiter.try_acquire("u2").allowed  # another user has their own budget
    clock.now_s += 20
    refused = limiter.try_acquire("u1")
    assert not refused.allowed and refused.retry_after_s == 40
    clock.now_s += 40  # the next minute
    assert limiter.try_acquire("u1").allowed
