"""The agent's conversations: one Strands ``Agent`` (its history) per AgentCore session id, and its running turn.

AgentCore routes every invocation carrying the same ``X-Amzn-Bedrock-AgentCore-Runtime-Session-Id`` to the same
runtime instance, so a session's conversation lives here while the session lives; with a history store
(:mod:`voice_agent.history`) a conversation opened again (after the runtime session ended, the process restarted,
or this process forgot it) continues from the store. Turns of one conversation never overlap (a Strands
agent runs one invocation at a time): :meth:`Conversations.begin` cancels the conversation's running turn
(barge-in by a new prompt) and waits until its work has stopped before the new turn may use the agent.
Everything here is used from the app's one worker event loop only.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from strands import Agent
from strands.session.session_manager import SessionManager

from relay_core.agent.defaults import BARGE_IN_TIMEOUT_S, MAX_CONVERSATIONS
from voice_agent.errors import VoiceAgentError
from voice_agent.turn import Turn

logger = logging.getLogger(__name__)


class ConversationBusyError(VoiceAgentError):
    """The conversation's previous turn did not stop within the barge-in timeout after its cancel."""


class DuplicateTurnError(VoiceAgentError):
    """A turn with this request id is already running."""


@dataclass
class Conversation:
    """One conversation: its agent, and the turn that is using the agent now (None when idle)."""

    session_id: str | None
    agent: Agent
    history: SessionManager | None = None
    """The Strands session manager that stores the agent's messages (None: kept in memory only)."""
    started_at: datetime | None = None
    """When the stored conversation began (None without a store): past the store's maximum age it starts over."""
    running: Turn | None = None
    latest: Turn | None = None
    """The conversation's most recent turn, running or ended (a barge-in may still cut its reply)."""


ConversationFactory = Callable[[str | None], Conversation]
"""Makes the conversation of a session id (None: a one-off), restoring its stored history: blocking I/O."""


class Conversations:
    """Conversations by session id (least recently used forgotten first), and running turns by request id."""

    def __init__(
        self,
        factory: ConversationFactory,
        *,
        max_conversations: int = MAX_CONVERSATIONS,
        barge_in_timeout_s: float = BARGE_IN_TIMEOUT_S,
        max_age: timedelta | None = None,
    ) -> None:
        """``max_age``: a conversation in memory that began longer ago is opened anew from the store (which starts
        it over), so a long-lived process follows the store's rule too."""
        self._factory = factory
        self._max = max_conversations
        self._barge_in_timeout_s = barge_in_timeout_s
        self._max_age = max_age
        self._by_session: OrderedDict[str, Conversation] = OrderedDict()
        self._opening: dict[str, asyncio.Future[Conversation]] = {}
        self._turns: dict[str, Turn] = {}

    def get(self, session_id: str | None) -> Conversation:
        """The session's conversation (created on first use, on this thread); a fresh one-off conversation when
        there is no id. An idle conversation may be forgotten when more than ``max_conversations`` exist; a busy
        one never is."""
        if session_id is None:
            return self._factory(None)
        conversation = self._by_session.get(session_id)
        if conversation is None:
            conversation = self._keep(self._factory(session_id))
        self._by_session.move_to_end(session_id)
        return conversation

    async def open(self, session_id: str | None) -> Conversation:
        """:meth:`get` for the event loop: a conversation not in memory (or past its maximum age and idle) is
        opened on a worker thread (its history read from the store), once however many turns ask at the same time.
        Raises what the factory raises (:class:`~voice_agent.history.HistoryUnavailableError`)."""
        if session_id is None:
            return await asyncio.to_thread(self._factory, None)
        conversation = self._by_session.get(session_id)
        if conversation is not None and self._too_old(conversation):
            logger.info("conversation %s is older than its maximum age: opened anew", session_id)
            del self._by_session[session_id]
            conversation = None
        if conversation is not None:
            self._by_session.move_to_end(session_id)
            return conversation
        opening = self._opening.get(session_id)
        if opening is None:
            opening = asyncio.get_running_loop().create_future()
            self._opening[session_id] = opening
            try:
                conversation = self._keep(await asyncio.to_thread(self._factory, session_id))
            except Exception as exc:
                opening.set_exception(exc)
                opening.exception()  # retrieved: no "never retrieved" warning when nobody else waits
                raise
            except BaseException:
                opening.cancel()
                raise
            finally:
                del self._opening[session_id]
            opening.set_result(conversation)
            return conversation
        return await asyncio.shield(opening)

    def _keep(self, conversation: Conversation) -> Conversation:
        assert conversation.session_id is not None
        self._by_session[conversation.session_id] = conversation
        self._forget_idle()
        return conversation

    def _too_old(self, conversation: Conversation) -> bool:
        if self._max_age is None or conversation.started_at is None or conversation.running is not None:
            return False
        return datetime.now(UTC) - conversation.started_at > self._max_age

    async def begin(self, conversation: Conversation, turn: Turn) -> None:
        """Make ``turn`` the conversation's running turn: cancel the one running now and wait until it has ended.

        Raises :class:`DuplicateTurnError` if a turn with the same request id runs, and
        :class:`ConversationBusyError` if the previous turn does not end within the barge-in timeout."""
        if turn.request_id in self._turns:
            raise DuplicateTurnError(
                f"a turn with request_id {turn.request_id!r} is already running; use a new request_id per turn"
            )
        self._turns[turn.request_id] = turn
        turn.on_ended(self._forget_turn)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._barge_in_timeout_s
        try:
            while (previous := conversation.running) is not None:
                logger.info("barge-in: turn %s cancels turn %s", turn.request_id, previous.request_id)
                previous.cancel()
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise TimeoutError
                await asyncio.wait_for(previous.wait_ended(), timeout=remaining)
        except TimeoutError:
            turn.cancel()
            raise ConversationBusyError(
                f"the conversation's previous turn did not stop within {self._barge_in_timeout_s:.0f} s of its "
                "cancel; retry in a moment"
            ) from None
        except BaseException:
            turn.cancel()
            raise
        conversation.running = turn
        conversation.latest = turn
        turn.on_ended(lambda ended: _release(conversation, ended))

    def running(self, *, session_id: str | None, request_id: str | None = None) -> list[Turn]:
        """Running turns: the one with ``request_id`` (in ``session_id``'s conversation when one is given), else
        the running turn of ``session_id``'s conversation."""
        if request_id is not None:
            turn = self._turns.get(request_id)
            if turn is None or (session_id is not None and turn.request.session_id != session_id):
                return []
            return [turn]
        if session_id is None:
            return []
        conversation = self._by_session.get(session_id)
        return [] if conversation is None or conversation.running is None else [conversation.running]

    def ended_latest(self, *, session_id: str | None, request_id: str | None = None) -> Turn | None:
        """The conversation's latest turn when it has ended and nothing newer runs (its audio may still be playing
        on the client): the turn a barge-in after ``agent_end`` interrupts. ``request_id`` must name it if given."""
        conversation = None if session_id is None else self._by_session.get(session_id)
        if conversation is None or conversation.running is not None or conversation.latest is None:
            return None
        latest = conversation.latest
        if request_id is not None and latest.request_id != request_id:
            return None
        return latest

    def _forget_turn(self, turn: Turn) -> None:
        if self._turns.get(turn.request_id) is turn:
            del self._turns[turn.request_id]

    def _forget_idle(self) -> None:
        for session_id in list(self._by_session):
            if len(self._by_session) <= self._max:
                return
            if self._by_session[session_id].running is None:
                del self._by_session[session_id]
                logger.info("conversation %s forgotten (more than %d conversations)", session_id, self._max)


def _release(conversation: Conversation, turn: Turn) -> None:
    if conversation.running is turn:
        conversation.running = None


__all__ = ["Conversation", "ConversationBusyError", "ConversationFactory", "Conversations", "DuplicateTurnError"]
