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
