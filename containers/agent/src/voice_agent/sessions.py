"""Per-session state of the agent app: one Strands ``Agent`` per AgentCore session, and the running turns.

AgentCore routes every invocation carrying the same ``X-Amzn-Bedrock-AgentCore-Runtime-Session-Id`` to the
same runtime instance, so a session's conversation lives here. A turn is registered while it runs so a
``cancel`` invocation (or a new prompt on the same session: barge-in) can stop it. Everything here is used
from the app's one worker event loop only.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from strands import Agent

logger = logging.getLogger(__name__)

MAX_SESSIONS = 256
"""Agents kept (least recently used dropped first); each holds one conversation's history."""


@dataclass
class RunningTurn:
    """A turn in progress: set ``cancel`` to stop it; ``finished`` is set once its last event is out."""

    request_id: str
    session_id: str | None
    cancel: asyncio.Event = field(default_factory=asyncio.Event)
    finished: asyncio.Event = field(default_factory=asyncio.Event)


class SessionRegistry:
    """Agents by session id, and turns by request id."""

    def __init__(self, agent_factory: Callable[[], Agent], *, max_sessions: int = MAX_SESSIONS) -> None:
        self._factory = agent_factory
        self._max = max_sessions
        self._agents: OrderedDict[str, Agent] = OrderedDict()
        self._turns: dict[str, RunningTurn] = {}

    def agent_for(self, session_id: str | None) -> Agent:
        """The session's agent (created on first use); a fresh one-off agent when there is no session id."""
        if session_id is None:
            return self._factory()
        agent = self._agents.get(session_id)
        if agent is None:
            agent = self._factory()
            self._agents[session_id] = agent
            while len(self._agents) > self._max:
                dropped, _ = self._agents.popitem(last=False)
                logger.info("session %s forgotten (more than %d sessions)", dropped, self._max)
        self._agents.move_to_end(session_id)
        return agent

    def start(self, request_id: str, session_id: str | None) -> RunningTurn:
        """Register a turn. Raises ``ValueError`` if a turn with this request id is already running."""
        if request_id in self._turns:
            raise ValueError(f"a turn with request_id {request_id!r} is already running; use a new request_id")
        turn = RunningTurn(request_id=request_id, session_id=session_id)
        self._turns[request_id] = turn
        return turn

    def finish(self, turn: RunningTurn) -> None:
        self._turns.pop(turn.request_id, None)
        turn.finished.set()

    def running(self, *, session_id: str | None, request_id: str | None = None) -> list[RunningTurn]:
        """Running turns matching ``request_id``, else every running turn of ``session_id``."""
        if request_id is not None:
            turn = self._turns.get(request_id)
            return [] if turn is None else [turn]
        if session_id is None:
            return []
        return [t for t in self._turns.values() if t.session_id == session_id]

    def cancel(self, *, session_id: str | None, request_id: str | None = None) -> list[RunningTurn]:
        """Signal the matching turns to stop; returns them (empty when nothing matched)."""
        turns = self.running(session_id=session_id, request_id=request_id)
        for turn in turns:
            turn.cancel.set()
        return turns


__all__ = ["MAX_SESSIONS", "RunningTurn", "SessionRegistry"]
