"""The offline ``speak`` model: a real Strands model provider that replies with the user's own words.

It is NOT a language model. It streams the text of the latest user message back as the assistant's reply,
token by token (LLM-like tokens: a word with its leading space, or a run of punctuation) at a fixed rate,
emitting exactly the stream events a Strands provider emits (``messageStart``, ``contentBlockStart``,
``contentBlockDelta``..., ``contentBlockStop``, ``messageStop``, ``metadata``). So the whole voice path —
agent, segmenter, TTS session, audio events — runs end to end with no LLM and no network, at a known pace
(benchmarks use 40 tokens/s, a realistic LLM rate). Logs and ``agent_start`` name it as what it is.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterable
from typing import Any, TypedDict, TypeVar

from strands.models.model import Model
from strands.types.content import Messages
from strands.types.streaming import StreamEvent

from voice_agent.errors import VoiceAgentError

T = TypeVar("T")

_TOKEN = re.compile(r"\s*[^\W_]+|\s*[^\w\s]|\s*_+|\s+")
SPEAK_MODEL_ID = "speak-echo"


def tokenize(text: str) -> list[str]:
    """LLM-like tokens of ``text``: each word or punctuation mark with the whitespace before it.
    ``"".join(tokenize(t)) == t`` always."""
    return _TOKEN.findall(text)


class SpeakConfig(TypedDict, total=False):
    """``tokens_per_s``: the streaming rate; ``first_token_delay_s``: wait before the first token."""

    model_id: str
    tokens_per_s: float
    first_token_delay_s: float


class SpeakModelError(VoiceAgentError):
    """The speak model was asked for something only a real LLM can do."""


def _last_user_text(messages: Messages) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return "".join(str(block["text"]) for block in message.get("content", []) if "text" in block)
    return ""


class SpeakModel(Model):
    """Streams the latest user message back as the reply, ``tokens_per_s`` tokens per second."""

    def __init__(self, *, tokens_per_s: float = 40.0, first_token_delay_s: float = 0.0) -> None:
        if tokens_per_s <= 0:
            raise ValueError(f"tokens_per_s must be positive; got {tokens_per_s}")
        self.config: SpeakConfig = {
            "model_id": SPEAK_MODEL_ID,
            "tokens_per_s": tokens_per_s,
            "first_token_delay_s": first_token_delay_s,
        }

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)  # type: ignore[typeddict-item]

    def get_config(self) -> SpeakConfig:
        return self.config

    def structured_output(
        self, output_model: type[T], prompt: Messages, system_prompt: str | None = None, **kwargs: Any
    ) -> AsyncGenerator[dict[str, T | Any], None]:
        raise SpeakModelError(
            "the speak model only echoes the prompt and cannot produce structured output; "
            "use the bedrock or openai model for that",
        )

    async def stream(
        self,
        messages: Messages,
        tool_specs: Any = None,
        system_prompt: str | None = None,
        *,
        cancel_signal: threading.Event | None = None,
        **kwargs: Any,
    ) -> AsyncIterable[StreamEvent]:
        """The reply as Strands stream events, one ``contentBlockDelta`` per token, paced by the clock."""
        text = _last_user_text(messages)
        tokens = tokenize(text)
        interval = 1.0 / float(self.config["tokens_per_s"])
        started = time.perf_counter()
        yield {"messageStart": {"role": "assistant"}}
        yield {"contentBlockStart": {"start": {}}}
        start_at = started + float(self.config.get("first_token_delay_s", 0.0))
        for index, token in enumerate(tokens):
            delay = start_at + index * interval - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            if cancel_signal is not None and cancel_signal.is_set():
                break  # Strands reports the invocation as cancelled; stop producing at once
            yield {"contentBlockDelta": {"delta": {"text": token}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}
        latency_ms = int((time.perf_counter() - started) * 1000)
        yield {
            "metadata": {
                "usage": {
                    "inputTokens": len(tokenize(system_prompt or "")) + len(tokens),
                    "outputTokens": len(tokens),
                    "totalTokens": len(tokenize(system_prompt or "")) + 2 * len(tokens),
                },
                "metrics": {"latencyMs": latency_ms},
            }
        }


__all__ = ["SPEAK_MODEL_ID", "SpeakModel", "SpeakModelError", "tokenize"]
