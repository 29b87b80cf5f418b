"""Strands' ``BedrockModel``, made to stop reading (and so the model to stop generating) when a turn is cancelled.

Why it exists: Strands' ``BedrockModel`` reads the ConverseStream response on a worker thread, which closes the
response at its next chunk *if the agent's cancel signal is set then*. But the agent clears that signal as soon as
the cancelled invocation ends, which is usually before the next chunk arrives; the worker then reads the rest of
the reply, and the model (Bedrock, billed by the token, or the local stand-in, on the CPU the speech needs) writes
all of it for nobody. Measured on the local SmolLM2: a barge-in after the first token still let the model write
all 255 tokens left (strands-agents 1.62.0).

:class:`StoppableBedrockModel` hands the worker a latch instead of the agent's signal: it is set for good when the
agent's signal is seen set, or when the stream is left before its end for any reason (cancel, a reader gone, an
error), and nothing clears it. The worker then closes the response at its next chunk, whoever ends the stream.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncGenerator
from typing import Any

from pydantic import BaseModel
from strands.models.bedrock import BedrockModel
from strands.types.content import Messages, SystemContentBlock
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolChoice, ToolSpec


class StopLatch(threading.Event):
    """An event that is set once ``source`` is seen set, and stays set (whatever happens to ``source`` after)."""

    def __init__(self, source: threading.Event | None) -> None:
        super().__init__()
        self._source = source

    def is_set(self) -> bool:
        if not super().is_set() and self._source is not None and self._source.is_set():
            self.set()
        return super().is_set()


class StoppableBedrockModel(BedrockModel):
    """``BedrockModel`` whose response reader stops at its next chunk once the stream is cancelled or left."""

    async def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        *,
        tool_choice: ToolChoice | None = None,
        system_prompt_content: list[SystemContentBlock] | None = None,
        cancel_signal: threading.Event | None = None,
        structured_output_model: type[BaseModel] | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[StreamEvent, None]:
        stop = StopLatch(cancel_signal)
        try:
            async for event in super().stream(
                messages,
                tool_specs,
                system_prompt,
                tool_choice=tool_choice,
                system_prompt_content=system_prompt_content,
                cancel_signal=stop,
                structured_output_model=structured_output_model,
                **kwargs,
            ):
                yield event
        finally:
            stop.set()  # after a complete stream the reader has already ended; otherwise it stops at its next chunk


__all__ = ["StopLatch", "StoppableBedrockModel"]
