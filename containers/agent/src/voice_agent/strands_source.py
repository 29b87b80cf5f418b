"""The reply of a Strands ``Agent`` as a :class:`~voice_agent.turn.TextSource`."""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator

from botocore.exceptions import BotoCoreError, ClientError
from strands import Agent
from strands.session.session_manager import SessionManager
from strands.types.content import Message
from strands.types.exceptions import SessionException

logger = logging.getLogger(__name__)


class StrandsTextSource:
    """Text deltas of ``agent.stream_async(prompt)``; :meth:`cancel` stops the invocation at its next checkpoint
    (the agent records the turn as cancelled, so a reused agent stays consistent). ``history``: the Strands session
    manager that stores the agent's messages, which a barge-in's cut is written through."""

    def __init__(self, agent: Agent, prompt: str, *, history: SessionManager | None = None) -> None:
        self._agent = agent
        self._prompt = prompt
        self._history = history
        self._cancel = threading.Event()

    async def stream(self) -> AsyncIterator[str]:
        async for event in self._agent.stream_async(self._prompt, cancel_signal=self._cancel):
            data = event.get("data")
            if isinstance(data, str) and data:
                yield data

    def cancel(self) -> None:
        self._cancel.set()

    def replace_reply(self, text: str) -> bool:
        """Make ``text`` the assistant's reply to this source's prompt in the agent's history (a barge-in's cut).

        The reply is what follows the last user message carrying this prompt: one assistant message (Strands
        records a cancelled invocation as the reply "Cancelled by user", a finished one as the whole reply), or
        none (the model was stopped before it answered). It becomes one assistant message with ``text``, in memory
        and in the stored history, through the session manager's own operations: the stored reply is redacted to
        the cut (``redact_latest_message``: it is the latest message stored), a missing one appended. Returns
        False, changing nothing, when the history holds no such prompt or the reply spans several messages (tool
        use, which this agent does not offer)."""
        messages = self._agent.messages
        for index in range(len(messages) - 1, -1, -1):
            message = messages[index]
            if message.get("role") == "user" and _text_of(message) == self._prompt:
                return self._cut(index, {"role": "assistant", "content": [{"text": text}]})
        logger.warning("the prompt of the interrupted turn is not in the history: nothing cut")
        return False

    def _cut(self, prompt_index: int, cut: Message) -> bool:
        messages = self._agent.messages
        following = len(messages) - prompt_index - 1
        if following > 1:
            logger.warning("the interrupted reply spans %d messages: history kept whole", following)
            return False
        if following == 1:
            messages[-1] = cut
        else:
            messages.append(cut)
        if self._history is None:
            return True
        try:
            if following == 1:
                self._history.redact_latest_message(cut, self._agent)
            else:
                self._history.append_message(cut, self._agent)
        except (SessionException, BotoCoreError, ClientError) as exc:
            logger.warning("the barge-in's cut could not be stored (%s): kept in memory only", type(exc).__name__)
        return True


def _text_of(message: Message) -> str:
    return "".join(str(block["text"]) for block in message.get("content", []) if "text" in block)


__all__ = ["StrandsTextSource"]
