"""The resume route racing other resumes of the same turn (its switches and refusals one at a time: test_routes.py)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from relay_functions.gateway import resume
from relay_functions.gateway.deps import GatewayDeps
from relay_functions.gateway.turns import TurnStore

USER = "user-racing"
TURN = "t-race"
CONNECTIONS = ("conn-first", "conn-2", "conn-3")
"""The connection the turn started on, then two connections the client resumes it from."""


@pytest.fixture
def turn(deps: GatewayDeps) -> str:
    """TURN runs on conn-first, which it claims; the user's other two connections are free."""
    for connection_id in CONNECTIONS:
        deps.connections.put(connection_id, user_id=USER, session_id="s" * 40)
    assert deps.connections.claim_turn("conn-first", TURN)
    deps.turns.create(TURN, user_id=USER, session_id="s" * 40, connection_id="conn-first")
    return TURN


def resume_on(gw: ModuleType, lambda_context: Any, connection_id: str) -> None:
    body = {"action": "resume", "turn_id": TURN, "after_seq": -1}
    event = gw.message_event("resume", body, connection_id=connection_id)
    assert resume.handler(event, lambda_context) == {"statusCode": 200}
    assert gw.posted(connection_id) == []  # a switch is answered by the relay, never by this handler


def claims(deps: GatewayDeps) -> dict[str, str | None]:
    held = {connection_id: deps.connections.get(connection_id) for connection_id in CONNECTIONS}
    return {connection_id: c.active_turn if c else "(gone)" for connection_id, c in held.items()}


def test_of_two_resumes_racing_the_one_switched_last_holds_the_turn_and_the_other_is_freed(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any, monkeypatch: pytest.MonkeyPatch, turn: str
) -> None:
    """Two resumes from two new connections, both claimed before either switch lands (the other resume runs whole
    between this one's claim and its switch). The relay reads the record every 200 ms and may only ever see the
    last switch, so the resume that switches the turn away from a connection must be the one to free it: here
    conn-3, which a read of the record before this switch could not name."""
    switch = TurnStore.resume
    interleaved: list[str] = []

    def other_resume_first(self: TurnStore, *args: Any, **kwargs: Any) -> Any:
        if not interleaved:
            interleaved.append(kwargs["connection_id"])
            resume_on(gw, lambda_context, "conn-3")  # from its claim to its release, before this switch
        return switch(self, *args, **kwargs)

    monkeypatch.setattr(TurnStore, "resume", other_resume_first)
    resume_on(gw, lambda_context, "conn-2")

    assert interleaved == ["conn-2"]
    record = deps.turns.get(turn)
    assert record is not None and (record.connection_id, record.resume_count) == ("conn-2", 2)
    assert claims(deps) == {"conn-first": None, "conn-2": turn, "conn-3": None}


def test_resumes_one_after_another_each_free_the_connection_they_leave(
    deps: GatewayDeps, gw: ModuleType, lambda_context: Any, turn: str
) -> None:
    resume_on(gw, lambda_context, "conn-2")
    assert claims(deps) == {"conn-first": None, "conn-2": turn, "conn-3": None}
    resume_on(gw, lambda_context, "conn-3")
    assert claims(deps) == {"conn-first": None, "conn-2": None, "conn-3": turn}
    resume_on(gw, lambda_context, "conn-3")  # again on the same connection (a gap to fill): it keeps the turn
    assert claims(deps) == {"conn-first": None, "conn-2": None, "conn-3": turn}
    record = deps.turns.get(turn)
    assert record is not None and (record.connection_id, record.resume_count) == ("conn-3", 3)
