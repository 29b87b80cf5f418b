"""Truthful barge-in: a cancel that says how much audio the listener played cuts the reply in the conversation
history at the last word heard, on both paths that keep history: a turn interrupted while the model still writes
(Strands records it as cancelled) and one interrupted after its reply was complete (its audio still playing).

The real agent service, the real speak model (Strands), and the real TTS container app with the int8 model."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from relay_core.agent.events import AgentCancel, AgentEnd, AgentEvent, AgentPayload, parse_event
from relay_core.word_timings import INTERRUPTED_MARK, WordTiming, WordTimings, apply_word_timings
from relay_transport.ws import WsTransport
from voice_agent.app import VoiceAgentService
from voice_agent.config import AgentConfig

pytestmark = pytest.mark.slow

SESSION = "barge-in-session-" + "t" * 24


def _service(tts_server: Any, *, rate: float) -> VoiceAgentService:
    config = AgentConfig(tts_url=tts_server.ws_url, speak_tokens_per_s=rate)
    return VoiceAgentService(config, transport=WsTransport(tts_server.ws_url, open_timeout_s=5.0))


async def _events(service: VoiceAgentService, payload: AgentPayload) -> AsyncIterator[AgentEvent]:
    assert payload.request_id is not None
    async for obj in service.turn(payload, payload.request_id, SESSION):
        yield parse_event(obj)


def _played_ms_between(words: list[WordTiming], heard: int) -> int:
    """A playback position after the midpoint of word ``heard - 1`` and before that of word ``heard``."""
    return round(500 * (words[heard - 1].midpoint_s + words[heard].midpoint_s))


def _last_reply(service: VoiceAgentService) -> str:
    message = service.conversations.get(SESSION).agent.messages[-1]
    assert message["role"] == "assistant"
    return "".join(str(block["text"]) for block in message["content"] if "text" in block)


def test_a_barge_in_after_the_reply_keeps_only_the_words_heard(tts_server: Any, bedrock_env: Any) -> None:
    prompt = "Hello there. One two three four five."
    service = _service(tts_server, rate=400.0)

    async def go() -> list[AgentEvent]:
        return [e async for e in _events(service, AgentPayload(prompt=prompt, request_id="done-1", timings=True))]

    events = asyncio.run(go())
    assert isinstance(events[-1], AgentEnd) and events[-1].status == "completed"
    words: list[WordTiming] = []
    for event in events:
        if isinstance(event, WordTimings):
            apply_word_timings(words, event)
    assert [w.word for w in words] == prompt.split(), "every word of both sentences, in order, on one timeline"
    assert all(w.final for w in words)
    assert {e.request_id for e in events if isinstance(e, WordTimings)} == {"done-1"}
    WordTimings("check", tuple(words))  # the second sentence's words come after the first's

    assert service.cancel(AgentCancel(), SESSION) == {"cancelled": []}
    assert _last_reply(service) == prompt, "without played_ms the history is left as it is"
    played = _played_ms_between(words, 4)  # "Hello there. One two" heard; "three" not
    service.cancel(AgentCancel(played_ms=played), SESSION)
    assert _last_reply(service) == f"Hello there. One two… {INTERRUPTED_MARK}"


def test_a_barge_in_while_the_model_writes_keeps_only_the_words_heard(tts_server: Any, bedrock_env: Any) -> None:
    prompt = "Hello there, friend. " + " ".join(f"Word{i}." for i in range(40))
    service = _service(tts_server, rate=8.0)

    async def go() -> list[AgentEvent]:
        events: list[AgentEvent] = []
        words: list[WordTiming] = []
        async for event in _events(service, AgentPayload(prompt=prompt, request_id="live-1", timings=True)):
            events.append(event)
            if isinstance(event, WordTimings):
                apply_word_timings(words, event)
                if len(words) >= 3:
                    service.cancel(AgentCancel(played_ms=_played_ms_between(words, 2)), SESSION)
        return events

    events = asyncio.run(asyncio.wait_for(go(), 180))
    end = events[-1]
    assert isinstance(end, AgentEnd) and end.status == "cancelled"
    assert _last_reply(service) == f"Hello there,… {INTERRUPTED_MARK}"
