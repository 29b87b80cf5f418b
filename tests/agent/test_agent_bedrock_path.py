"""The production model path end to end: the agent's Strands ``BedrockModel`` (and its ``OpenAIModel``) against the
local stand-ins, the real TTS container app speaking the reply. The echo model for most cases; the real
SmolLM2-135M-Instruct for one short turn and the barge-in's CPU check (loaded once per process, replies capped)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from strands.models.model import Model

from relay_core.agent.defaults import MODEL_ATTEMPTS
from relay_core.agent.events import (
    AgentCancel,
    AgentEnd,
    AgentEvent,
    AgentFailed,
    AgentPayload,
    AgentStart,
    TextDelta,
    TurnStatus,
    parse_event,
)
from relay_core.word_timings import INTERRUPTED_MARK, WordTiming, WordTimings, apply_word_timings
from relay_local.bedrock import ECHO_MODEL_ID, SMOLLM2_MODEL_ID
from relay_local.bedrock.runtime import THROTTLING_MESSAGE
from relay_transport.ws import WsTransport
from voice_agent.app import VoiceAgentService
from voice_agent.config import AgentConfig, ModelKind
from voice_agent.models.bedrock import StoppableBedrockModel

pytestmark = pytest.mark.slow

SESSION = "bedrock-path-session-" + "b" * 20
PROMPT = "Hello there. One two three four five."


def _service(tts_server: Any, config: AgentConfig, factory: Callable[[], Model] | None = None) -> VoiceAgentService:
    return VoiceAgentService(
        config, transport=WsTransport(tts_server.ws_url, open_timeout_s=5.0), model_factory=factory
    )


def _echo(tts_server: Any, rate: float = 200.0) -> VoiceAgentService:
    return _service(tts_server, AgentConfig(tts_url=tts_server.ws_url, speak_tokens_per_s=rate))


async def _events(service: VoiceAgentService, payload: AgentPayload) -> AsyncIterator[AgentEvent]:
    assert payload.request_id is not None
    async for obj in service.turn(payload, payload.request_id, SESSION):
        yield parse_event(obj)


def _turn(service: VoiceAgentService, prompt: str, request_id: str) -> list[AgentEvent]:
    async def go() -> list[AgentEvent]:
        payload = AgentPayload(prompt=prompt, request_id=request_id, timings=True)
        return [e async for e in _events(service, payload)]

    return asyncio.run(asyncio.wait_for(go(), 120))


def _spoken(events: list[AgentEvent]) -> list[str]:
    return [w.word for w in _timed_words(events)]


def _reply(events: list[AgentEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def test_a_turn_through_bedrock_model_speaks_every_sentence_of_the_reply(tts_server: Any, bedrock_env: Any) -> None:
    events = _turn(_echo(tts_server), PROMPT, "echo-1")
    assert isinstance(events[0], AgentStart) and "local.echo" in events[0].model
    assert isinstance(events[-1], AgentEnd) and events[-1].status == "completed"
    assert _reply(events) == PROMPT
    assert _spoken(events) == PROMPT.split()


def test_the_real_small_model_answers_and_every_sentence_is_spoken(tts_server: Any, bedrock_env: Any) -> None:
    config = AgentConfig(tts_url=tts_server.ws_url, model=ModelKind.BEDROCK, model_id=SMOLLM2_MODEL_ID)
    service = _service(tts_server, config, lambda: StoppableBedrockModel(model_id=SMOLLM2_MODEL_ID, max_tokens=24))
    events = _turn(service, "What is the capital of France?", "smol-1")
    assert isinstance(events[0], AgentStart) and SMOLLM2_MODEL_ID in events[0].model
    assert isinstance(events[-1], AgentEnd) and events[-1].status == "completed", events[-1]
    reply = _reply(events)
    assert "Paris" in reply
    assert _spoken(events) == reply.split()
    sent = bedrock_env.runtime.last_request
    assert sent.model_id == SMOLLM2_MODEL_ID and sent.system == config.system_prompt


def test_the_conversation_so_far_reaches_the_model(tts_server: Any, bedrock_env: Any) -> None:
    service = _echo(tts_server, rate=1000.0)
    _turn(service, "My name is Ada.", "memory-1")
    _turn(service, "What is my name?", "memory-2")
    sent = bedrock_env.runtime.last_request
    assert [(m.role, m.text) for m in sent.messages] == [
        ("user", "My name is Ada."),
        ("assistant", "My name is Ada."),
        ("user", "What is my name?"),
    ]


def test_throttling_ends_the_turn_with_model_failed_saying_so(tts_server: Any, bedrock_env: Any) -> None:
    bedrock_env.runtime.faults.throttle(2)  # both of the agent's attempts (one HTTP attempt each here)
    service = _echo(tts_server)
    asked_before = bedrock_env.runtime.requests
    events = _turn(service, PROMPT, "throttled-1")
    end = events[-1]
    assert isinstance(end, AgentFailed) and end.code == "model_failed"
    assert "ThrottlingException" in end.message and THROTTLING_MESSAGE in end.message
    # a throttled turn must not wait minutes in silence: the agent's MODEL_ATTEMPTS, not Strands' six over two minutes
    assert bedrock_env.runtime.requests - asked_before == MODEL_ATTEMPTS


def test_a_mid_stream_model_error_ends_the_turn_with_model_failed(tts_server: Any, bedrock_env: Any) -> None:
    bedrock_env.runtime.faults.break_stream(after_tokens=3)
    events = _turn(_echo(tts_server), PROMPT, "broken-1")
    end = events[-1]
    assert isinstance(end, AgentFailed) and end.code == "model_failed"
    assert "modelStreamErrorException" in end.message
    assert _reply(events) == "Hello there.", "the text written before the error still reached the client"


TOKENS_AFTER_A_BARGE_IN = 32
"""How many tokens the local model may still make after a barge-in: the client closes the stream at the next event,
the stand-in sees the disconnect and the model stops before its next token (a few tokens on any machine), far fewer
than the rest of a 400-token story. Counted in tokens, not seconds, so that a slow machine cannot fail it."""


def test_a_barge_in_closes_the_model_stream_and_frees_its_cpu(tts_server: Any, bedrock_env: Any) -> None:
    runtime = bedrock_env.runtime
    quiet_by = time.monotonic() + 60
    while runtime.active and time.monotonic() < quiet_by:  # an earlier test's reply may still be finishing
        time.sleep(0.05)
    assert runtime.active == 0, "the shared stand-in never went quiet"
    config = AgentConfig(tts_url=tts_server.ws_url, model=ModelKind.BEDROCK, model_id=SMOLLM2_MODEL_ID)
    service = _service(tts_server, config, lambda: StoppableBedrockModel(model_id=SMOLLM2_MODEL_ID, max_tokens=400))

    async def go() -> tuple[int, int]:
        payload = AgentPayload(prompt="Tell me a long story about a dragon.", request_id="barge-smol")
        made_at_barge_in: int | None = None
        events: list[AgentEvent] = []
        async for event in _events(service, payload):  # read to the end, as a client does, the loop running
            events.append(event)
            if isinstance(event, TextDelta) and made_at_barge_in is None:
                generation = runtime.last_generation
                assert runtime.active == 1 and generation is not None
                made_at_barge_in = generation.output_tokens
                service.cancel(AgentCancel(), SESSION)
        assert made_at_barge_in is not None, "no text before the turn ended"
        end = events[-1]
        assert isinstance(end, AgentEnd) and end.status == TurnStatus.CANCELLED
        generation = runtime.last_generation
        assert generation is not None
        assert await asyncio.to_thread(generation.finished.wait, 120), "the model never stopped (a hang)"
        return made_at_barge_in, generation.output_tokens

    at_barge_in, at_end = asyncio.run(asyncio.wait_for(go(), 180))
    assert at_end - at_barge_in <= TOKENS_AFTER_A_BARGE_IN, (
        f"the model made {at_end - at_barge_in} tokens after the barge-in (at most {TOKENS_AFTER_A_BARGE_IN})"
    )


def _timed_words(events: list[Any]) -> list[WordTiming]:
    """The turn's words once every word_timings event is applied in order (estimates replaced by final times)."""
    words: list[WordTiming] = []
    for event in events:
        if isinstance(event, WordTimings):
            apply_word_timings(words, event)
    assert all(w.final for w in words)
    return words


def _between(words: list[WordTiming], heard: int) -> int:
    return round(500 * (words[heard - 1].midpoint_s + words[heard].midpoint_s))


def test_the_truthful_barge_in_cut_reaches_the_next_requests_messages(tts_server: Any, bedrock_env: Any) -> None:
    service = _echo(tts_server, rate=400.0)
    events = _turn(service, PROMPT, "cut-1")
    words = _timed_words(events)
    service.cancel(AgentCancel(played_ms=_between(words, 4)), SESSION)
    _turn(service, "Sorry, go on.", "cut-2")
    sent = bedrock_env.runtime.last_request
    assert [(m.role, m.text) for m in sent.messages] == [
        ("user", PROMPT),
        ("assistant", f"Hello there. One two… {INTERRUPTED_MARK}"),
        ("user", "Sorry, go on."),
    ]


def test_the_openai_compatible_provider_speaks_every_sentence_too(tts_server: Any, bedrock_env: Any) -> None:
    config = AgentConfig(
        tts_url=tts_server.ws_url,
        model=ModelKind.OPENAI,
        model_id=ECHO_MODEL_ID,
        model_base_url=bedrock_env.openai_base_url,
    )
    service = _service(tts_server, config)
    events = _turn(service, PROMPT, "openai-1")
    assert isinstance(events[0], AgentStart) and events[0].model == f"openai:{ECHO_MODEL_ID}"
    assert isinstance(events[-1], AgentEnd) and events[-1].status == "completed", events[-1]
    assert _reply(events) == PROMPT and _spoken(events) == PROMPT.split()
    _turn(service, "And again.", "openai-2")
    assert [m.text for m in bedrock_env.runtime.last_request.messages] == [PROMPT, PROMPT, "And again."]
