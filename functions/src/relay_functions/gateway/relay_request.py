"""The relay function's invocation payload: what ``sendMessage`` hands to the asynchronously invoked relay.

``{"turn_id", "connection_id", "user_id", "session_id", "connections_endpoint", "agent": {<agent payload>}}``
where ``agent`` is the §3 payload (``prompt``, ``mode``, ``voice``, ``speed``, ``request_id`` = the turn id)
and ``connections_endpoint`` the ``https://{domainName}/{stage}`` @connections endpoint of the API.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from relay_core.agent.events import AgentPayload, parse_payload
from relay_core.client.messages import check_turn_id
from relay_core.errors import InvalidFieldError
from relay_core.fields import JsonObject, get_str


@dataclass(frozen=True, slots=True)
class RelayRequest:
    turn_id: str
    connection_id: str
    user_id: str
    session_id: str
    connections_endpoint: str
    agent: AgentPayload

    def to_json(self) -> JsonObject:
        return {
            "turn_id": self.turn_id,
            "connection_id": self.connection_id,
            "user_id": self.user_id,
            "session_id": self.session_id,
            "connections_endpoint": self.connections_endpoint,
            "agent": self.agent.to_json(),
        }

    @classmethod
    def from_json(cls, obj: Any) -> RelayRequest:
        """Parse an invocation payload; raises ``InvalidFieldError`` naming the bad field."""
        if not isinstance(obj, dict):
            raise InvalidFieldError("the relay's payload must be a JSON object")
        agent = obj.get("agent")
        if not isinstance(agent, dict):
            raise InvalidFieldError("'agent' is required: the agent payload object")
        turn_id = check_turn_id(_required(obj, "turn_id"))
        return cls(
            turn_id=turn_id,
            connection_id=_required(obj, "connection_id"),
            user_id=_required(obj, "user_id"),
            session_id=_required(obj, "session_id"),
            connections_endpoint=_required(obj, "connections_endpoint"),
            agent=parse_payload({**agent, "request_id": turn_id}),
        )


def _required(obj: JsonObject, name: str) -> str:
    value = get_str(obj, name, required=True, allow_empty=False)
    assert value is not None
    return value


LATE_CANCEL = "late_cancel"
"""The key of a relay payload that carries a :class:`LateCancel` instead of a turn."""
LATE_CANCEL_FAILED = "the agent could not be told what you heard: try again"
"""The client's ``error agent_unavailable`` message when a late barge-in could not reach the agent."""


@dataclass(frozen=True, slots=True)
class LateCancel:
    """A late barge-in handed to the relay function (``{"late_cancel": {...}}``): tell the agent how much of the
    turn ``turn_id`` the listener heard, on the turn's session, and tell the client if that fails.

    ``cancel`` queues it (``InvocationType=Event``) rather than calling the agent itself: a runtime session that
    went cold starts a new microVM first, which may take longer than a route function may run; the relay
    function may wait as long as a turn."""

    turn_id: str
    session_id: str
    played_ms: int
    connection_id: str
    connections_endpoint: str

    def to_json(self) -> JsonObject:
        return {
            LATE_CANCEL: {
                "turn_id": self.turn_id,
                "session_id": self.session_id,
                "played_ms": self.played_ms,
                "connection_id": self.connection_id,
                "connections_endpoint": self.connections_endpoint,
            }
        }

    @classmethod
    def from_json(cls, obj: Any) -> LateCancel:
        """Parse a late cancel payload; raises ``InvalidFieldError`` naming the bad field."""
        body = obj.get(LATE_CANCEL) if isinstance(obj, dict) else None
        if not isinstance(body, dict):
            raise InvalidFieldError(f"{LATE_CANCEL!r} must be an object")
        played_ms = body.get("played_ms")
        if not isinstance(played_ms, int) or isinstance(played_ms, bool) or played_ms < 0:
            raise InvalidFieldError("'played_ms' must be a whole number of milliseconds, at least 0")
        return cls(
            turn_id=check_turn_id(_required(body, "turn_id")),
            session_id=_required(body, "session_id"),
            played_ms=played_ms,
            connection_id=_required(body, "connection_id"),
            connections_endpoint=_required(body, "connections_endpoint"),
        )


def is_late_cancel(obj: Any) -> bool:
    """Whether a relay payload is a :class:`LateCancel` (rather than a turn)."""
    return isinstance(obj, dict) and LATE_CANCEL in obj
