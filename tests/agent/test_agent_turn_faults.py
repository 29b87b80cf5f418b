"""Turn rules that need no TTS audio: model failures, config parsing, the transport factory."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from relay_core.agent.events import AgentEvent, AgentFailed, AgentStart, TextDelta
from relay_transport.errors import TtsUnavailableError
from relay_transport.ws import WsTransport
from voice_agent.config import AgentConfig, ModelKind, TransportKind
from voice_agent.errors import ConfigError
from voice_agent.transport_choice import make_transport
from voice_agent.turn import TurnRequest, TurnSettings, run_turn

CLOSED_PORT_URL = "ws://127.0.0.1:9/invocations-bidirectional-stream"


class FailingSource:
    """Writes two deltas, then fails the way a model SDK does."""

    def __init__(self) -> None:
        self.cancelled = False

    async def stream(self) -> AsyncIterator[str]:
        yield "Hello there. "
        yield "More"
        raise ConnectionError("model endpoint reset the connection\n  File secret.py, line 3")

    def cancel(self) -> None:
        self.cancelled = True


class EndlessSource:
    """Writes a sentence every few milliseconds until it is cancelled, as a model SDK's stream would."""

    def __init__(self) -> None:
        self.cancelled = False

    async def stream(self) -> AsyncIterator[str]:
        while not self.cancelled:
            yield "On and on. "
            await asyncio.sleep(0.01)

    def cancel(self) -> None:
        self.cancelled = True


async def _events(source: FailingSource) -> list[AgentEvent]:
    turn = run_turn(
        TurnRequest(request_id="r1", prompt="x"),
        source,
        WsTransport(CLOSED_PORT_URL, open_timeout_s=1.0),
        settings=TurnSettings(),
        cancel=asyncio.Event(),
    )
    return [event async for event in turn]


def test_a_model_failure_ends_the_turn_with_one_clean_error_after_the_text() -> None:
    events = asyncio.run(_events(FailingSource()))
    assert isinstance(events[0], AgentStart)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hello there. ", "More"]
    end = events[-1]
    assert isinstance(end, AgentFailed) and end.code == "model_failed"
    assert "ConnectionError" in end.message
    assert "secret.py" not in end.message and "Traceback" not in end.message
    assert sum(isinstance(e, AgentFailed) for e in events) == 1


def test_a_turn_whose_event_loop_closes_under_it_tells_the_model_to_stop() -> None:
    # asyncio.run returning with the turn still running cancels the turn's engine task outright; a model SDK that
    # reads on a thread of its own (Strands' Bedrock stream) would then go on generating the whole reply.
    source = EndlessSource()

    async def go() -> None:
        turn = run_turn(
            TurnRequest(request_id="r1", prompt="x"),
            source,
            WsTransport(CLOSED_PORT_URL, open_timeout_s=1.0),
            settings=TurnSettings(),
            cancel=asyncio.Event(),
        )
        async for event in turn:
            if isinstance(event, TextDelta):
                return  # the turn is left running

    asyncio.run(asyncio.wait_for(go(), 60))
    assert source.cancelled


def test_refused_transport_raises_a_typed_error() -> None:
    async def go() -> None:
        await WsTransport(CLOSED_PORT_URL, open_timeout_s=1.0).connect()

    with pytest.raises(TtsUnavailableError, match="Kokoro container is running"):
        asyncio.run(go())


def test_config_from_env() -> None:
    config = AgentConfig.from_env(
        {
            "VOICE_AGENT_TTS_URL": "ws://tts:9000/invocations-bidirectional-stream",
            "VOICE_AGENT_MODEL": "openai",
            "VOICE_AGENT_MODEL_ID": "llama3.2",
            "VOICE_AGENT_MODEL_BASE_URL": "http://127.0.0.1:11434/v1",
            "VOICE_AGENT_FIRST_FRAGMENT_WORDS": "off",
        }
    )
    assert config.model is ModelKind.OPENAI and config.model_id == "llama3.2"
    assert config.first_fragment_words is None
    assert config.tts_url.startswith("ws://tts:9000")
    assert AgentConfig.from_env({}).model is ModelKind.SPEAK
    assert "no LLM" in AgentConfig().model_label


@pytest.mark.parametrize(
    ("env", "match"),
    [
        ({"VOICE_AGENT_TRANSPORT": "sagemaker"}, "endpoint name"),
        ({"VOICE_AGENT_TTS_URL": "http://x"}, "ws://"),
        ({"VOICE_AGENT_MODEL": "openai"}, "model id"),
        ({"VOICE_AGENT_SPEAK_TOKENS_PER_S": "fast"}, "invalid value"),
        ({"VOICE_AGENT_MODEL": "gpt"}, "invalid value"),
    ],
)
def test_config_errors_say_what_to_do(env: dict[str, str], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        AgentConfig.from_env(env)


def test_factory_picks_ws_by_default() -> None:
    transport = make_transport(AgentConfig(tts_url="ws://127.0.0.1:1/x"))
    assert isinstance(transport, WsTransport) and transport.url == "ws://127.0.0.1:1/x"
    assert AgentConfig().transport is TransportKind.WS
