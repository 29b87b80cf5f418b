"""Strands' ``BedrockModel`` (the agent's one model path) against the local stand-in's echo model: token by
token at the requested pace, the conversation recorded as with any model, and every turn's history reaching the
model."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from strands import Agent
from strands.models.bedrock import BedrockModel

from relay_local.bedrock import ECHO_MODEL_ID
from relay_local.bedrock.models import tokenize


def _agent(rate: float) -> Agent:
    model = BedrockModel(model_id=ECHO_MODEL_ID, additional_request_fields={"tokens_per_s": rate})
    return Agent(model=model, system_prompt="Be brief.", callback_handler=None)


async def _deltas(agent: Agent, prompt: str) -> list[str]:
    return [e["data"] async for e in agent.stream_async(prompt) if isinstance(e.get("data"), str)]


def test_the_echo_model_streams_the_prompt_back_token_by_token_at_the_rate(bedrock_env: Any) -> None:
    prompt = "One two three. Four five six seven."
    agent = _agent(50.0)
    started = time.perf_counter()
    deltas = asyncio.run(_deltas(agent, prompt))
    assert deltas == tokenize(prompt)
    assert time.perf_counter() - started >= (len(deltas) - 1) / 50.0
    assert [m["role"] for m in agent.messages] == ["user", "assistant"]


def test_every_turn_sends_the_whole_conversation_to_the_model(bedrock_env: Any) -> None:
    agent = _agent(1000.0)
    asyncio.run(_deltas(agent, "First."))
    assert "".join(asyncio.run(_deltas(agent, "Second one."))) == "Second one."
    sent = bedrock_env.runtime.last_request
    assert [(m.role, m.text) for m in sent.messages] == [
        ("user", "First."),
        ("assistant", "First."),
        ("user", "Second one."),
    ]
    assert sent.system == "Be brief."
