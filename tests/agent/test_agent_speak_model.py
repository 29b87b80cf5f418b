"""The offline speak model is a real Strands provider: a Strands Agent streams the prompt back through it."""

from __future__ import annotations

import asyncio
import time

from hypothesis import given
from hypothesis import strategies as st
from strands import Agent

from voice_agent.models.speak import SpeakModel, tokenize


@given(st.text(max_size=200))
def test_tokens_join_back_to_the_text(text: str) -> None:
    assert "".join(tokenize(text)) == text


def test_tokens_look_like_llm_tokens() -> None:
    assert tokenize("Hello, world. It's 3.5 km!") == [
        "Hello", ",", " world", ".", " It", "'", "s", " 3", ".", "5", " km", "!"
    ]  # fmt: skip


async def _deltas(agent: Agent, prompt: str) -> tuple[list[str], str]:
    deltas: list[str] = []
    result = None
    async for event in agent.stream_async(prompt):
        if isinstance(event.get("data"), str):
            deltas.append(event["data"])
        if "result" in event:
            result = event["result"]
    assert result is not None
    return deltas, str(result).strip()


def test_agent_streams_the_prompt_back_token_by_token_at_the_rate() -> None:
    prompt = "One two three. Four five six seven."
    agent = Agent(model=SpeakModel(tokens_per_s=200.0), callback_handler=None)
    started = time.perf_counter()
    deltas, reply = asyncio.run(_deltas(agent, prompt))
    elapsed = time.perf_counter() - started
    assert deltas == tokenize(prompt)
    assert "".join(deltas) == prompt == reply
    assert elapsed >= (len(deltas) - 1) / 200.0
    # The conversation is recorded like any model's: user prompt, assistant reply.
    assert [m["role"] for m in agent.messages] == ["user", "assistant"]


def test_second_turn_echoes_the_new_prompt() -> None:
    agent = Agent(model=SpeakModel(tokens_per_s=1000.0), callback_handler=None)
    asyncio.run(_deltas(agent, "First."))
    deltas, _ = asyncio.run(_deltas(agent, "Second one."))
    assert "".join(deltas) == "Second one."
