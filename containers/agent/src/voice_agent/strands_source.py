"""The reply of a Strands ``Agent`` as a :class:`~voice_agent.turn.TextSource`."""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator

from strands import Agent
from strands.types.content import Message

logger = logging.getLogger(__name__)


class StrandsTextSource:
    """Text deltas of ``agent.stream_async(prompt)``; :meth:`cancel` stops the invocation at its next checkpoint
    (the agent records the turn as cancelled, so a reused agent stays consistent)."""

    def __init__(self, agent: Agent, prompt: str) -> None:
        self._agent = agent
        self._prompt = prompt
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

        The reply is everything after the last user message carrying this prompt (Strands records a cancelled
        invocation as the reply "Cancelled by user"; a finished one as the whole reply); it becomes one assistant
        message with ``text``. Returns False, changing nothing, when the history holds no such prompt."""
        messages = self._agent.messages
        for index in range(len(messages) - 1, -1, -1):
            message = messages[index]
            if message.get("role") == "user" and _text_of(message) == self._prompt:
                del messages[index + 1 :]
                messages.append({"role": "assistant", "content": [{"text": text}]})
                return True
        logger.warning("the prompt of the interrupted turn is not in the history: nothing cut")
        return False


def _text_of(message: Message) -> str:
    return "".join(str(block["text"]) for block in message.get("content", []) if "text" in block)


__all__ = ["StrandsTextSource"]
