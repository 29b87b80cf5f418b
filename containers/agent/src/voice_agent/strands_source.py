"""The reply of a Strands ``Agent`` as a :class:`~voice_agent.turn.TextSource`."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator

from strands import Agent


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


__all__ = ["StrandsTextSource"]
