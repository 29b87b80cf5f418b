"""How a turn ends when nobody waits for it, when a new prompt interrupts it, and when its TTS session stalls.

The real agent app and the real TTS container app (real int8 Kokoro model) on loopback. The container's engine is
wrapped (never replaced) to log when each segment render starts; the model is the agent's Bedrock model
(``StoppableBedrockModel``) on the local Bedrock stand-in's echo model (the speak model), wrapped to log when each
token arrives; the transport is wrapped to log when the TTS session is released.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from kokoro_server.engines import Segment
from kokoro_server.engines.speech_engine import DelegatingEngine
from relay_cli.agent_client import collect_turn, stream_turn
from relay_core.agent.defaults import ECHO_RATE_FIELD, LOCAL_ECHO_MODEL_ID
from relay_core.agent.events import (
    AgentEnd,
    AgentEvent,
    AgentFailed,
    AgentPayload,
    AudioChunk,
    TextDelta,
    parse_event,
)
from relay_core.speech_options import SpeechOptions
from relay_core.sse import SseDecoder
from relay_local.servers import BackgroundServer
from relay_transport.base import TtsConnection, TtsTransport
from relay_transport.errors import TtsConnectionClosed, TtsUnavailableError
from relay_transport.ws import WsTransport
from voice_agent.app import create_app
from voice_agent.config import AgentConfig
from voice_agent.models.bedrock import StoppableBedrockModel
from voice_agent.turn import Turn, TurnRequest, TurnSettings

pytestmark = pytest.mark.slow

LONG_PROMPT = " ".join(f"Sentence number {n} is spoken here." for n in range(1, 31))
"""About 180 tokens: many seconds of writing at the rates below, so the caller can leave in the middle."""
STOP_WITHIN_S = 1.0


class RenderLog(DelegatingEngine):
    """The real engine (whole segments); remembers when each segment render started (monotonic seconds)."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner, streams=False)
        self.starts: list[float] = []
        self.started = threading.Event()

    def before_render(self, segment: Segment) -> None:
        self.starts.append(time.monotonic())
        self.started.set()


class TokenLog(StoppableBedrockModel):
    """The agent's Bedrock model (Strands' BedrockModel that stops reading once its stream is left, as the agent's
    factory makes it) on the local stand-in's echo model (the speak model); remembers when each token arrived, and
    each reply's start and end. (Plain BedrockModel read a left reply to its end: the stand-in went on writing
    for nobody, and stopping it waited 10 s at the end of the run.)"""

    def __init__(self, log: ModelLog, *, tokens_per_s: float) -> None:
        super().__init__(model_id=LOCAL_ECHO_MODEL_ID, additional_request_fields={ECHO_RATE_FIELD: tokens_per_s})
        self._log = log

    async def stream(self, messages: Any, tool_specs: Any = None, system_prompt: str | None = None, **kw: Any) -> Any:
        start = time.monotonic()
        try:
            async for event in super().stream(messages, tool_specs, system_prompt, **kw):
                if "contentBlockDelta" in event:
                    self._log.tokens.append(time.monotonic())
                yield event
        finally:
            self._log.replies.append((start, time.monotonic()))


@dataclass
class ModelLog:
    tokens: list[float] = field(default_factory=list)
    replies: list[tuple[float, float]] = field(default_factory=list)


class ReleaseLoggingConnection:
    def __init__(self, inner: TtsConnection, log: list[float]) -> None:
        self._inner = inner
        self._log = log

    async def send(self, frame: str) -> None:
        await self._inner.send(frame)

    async def receive(self) -> str | bytes:
        return await self._inner.receive()

    async def aclose(self) -> None:
        await self._inner.aclose()
        self._log.append(time.monotonic())


@dataclass
class ReleaseLoggingTransport:
    """A real transport; remembers when each session was released."""

    inner: TtsTransport
    opened: int = 0
    released: list[float] = field(default_factory=list)

    async def connect(self) -> TtsConnection:
        conn = await self.inner.connect()
        self.opened += 1
        return ReleaseLoggingConnection(conn, self.released)


@dataclass
class Rig:
    agent_url: str
    engine: RenderLog
    model: ModelLog
    transport: ReleaseLoggingTransport


@pytest.fixture
def rig(onnx_engine: Any, serve_tts: Any, bedrock_env: Any) -> Iterator[Any]:
    """``rig(rate)``: a TTS server with a render log, and an agent whose model and transport keep logs."""
    engine = RenderLog(onnx_engine)
    servers: list[BackgroundServer] = []
    with serve_tts(engine) as tts:

        def start(rate: float) -> Rig:
            log = ModelLog()
            transport = ReleaseLoggingTransport(WsTransport(tts.ws_url))
            app = create_app(
                AgentConfig(tts_url=tts.ws_url),
                transport=transport,
                model_factory=lambda: TokenLog(log, tokens_per_s=rate),
            )
            server = BackgroundServer(app, name="agent").start()
            servers.append(server)
            return Rig(agent_url=server.http_url, engine=engine, model=log, transport=transport)

        yield start
        for server in servers:
            server.stop()


async def _post_until_audio_then_vanish(agent_url: str, payload: dict[str, Any]) -> tuple[float, list[AgentEvent]]:
    """POST a turn on a raw socket, read events until the first audio chunk, then drop the connection."""
    host, port = agent_url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    body = json.dumps(payload).encode()
    head = f"POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
    writer.write(head.encode() + b"\r\n\r\n" + body)
    await writer.drain()
    await reader.readuntil(b"\r\n\r\n")  # status line and headers
    decoder = SseDecoder()
    events: list[AgentEvent] = []
    while not any(isinstance(e, AudioChunk) for e in events):
        chunk = await reader.read(65536)
        assert chunk, "the agent ended the stream before any audio"
        # chunked transfer encoding: the SSE lines survive inside the chunks; size lines are not "data:" lines
        events += [parse_event(e.data) for e in decoder.feed(chunk) if e.data.startswith("{")]
    writer.transport.abort()
    return time.monotonic(), events


def test_a_caller_that_disconnects_stops_the_model_and_the_tts_session_within_a_second(rig: Any) -> None:
    agent = rig(rate=5.0)  # 40 s of writing: the first audio comes long before the end, however busy the machine
    gone_at, events = asyncio.run(
        asyncio.wait_for(_post_until_audio_then_vanish(agent.agent_url, {"prompt": LONG_PROMPT}), 120)
    )
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert len(text) < len(LONG_PROMPT)  # speech overlapped writing: the caller left in the middle of the reply
    time.sleep(STOP_WITHIN_S + 1.5)  # let anything that would still run for nobody show itself
    # The TTS session was released, and the container rendered nothing new after it went.
    assert len(agent.transport.released) == agent.transport.opened == 1
    assert agent.transport.released[0] - gone_at <= STOP_WITHIN_S
    late_renders = [t - gone_at for t in agent.engine.starts if t > gone_at + STOP_WITHIN_S]
    assert late_renders == []
    # The model stopped writing.
    assert agent.model.tokens[-1] - gone_at <= STOP_WITHIN_S
    assert len(agent.model.tokens) < len(LONG_PROMPT.split()) * 2


def test_a_new_prompt_cancels_the_running_turn_and_waits_for_it(rig: Any) -> None:
    agent = rig(rate=20.0)
    session_id = "barge-in-" + "b" * 40
    second_prompt = "Stop. Say this instead."

    async def go() -> tuple[list[AgentEvent], list[AgentEvent]]:
        async with httpx.AsyncClient(timeout=120) as client:
            first: list[AgentEvent] = []
            first_text = asyncio.Event()

            async def first_turn() -> None:
                payload = AgentPayload(prompt=LONG_PROMPT, request_id="first")
                async for event in stream_turn(client, agent.agent_url, payload, session_id=session_id):
                    first.append(event)
                    if isinstance(event, TextDelta):
                        first_text.set()

            task = asyncio.create_task(first_turn())
            await first_text.wait()
            second = await collect_turn(
                client, agent.agent_url, AgentPayload(prompt=second_prompt, request_id="second"), session_id=session_id
            )
            await task
            return first, second.events

    first, second = asyncio.run(asyncio.wait_for(go(), 180))
    assert isinstance(first[-1], AgentEnd) and first[-1].status == "cancelled"
    assert isinstance(second[-1], AgentEnd) and second[-1].status == "completed"
    assert "".join(e.text for e in second if isinstance(e, TextDelta)) == second_prompt
    assert any(isinstance(e, AudioChunk) for e in second)
    # One Strands agent, two replies, never at the same time.
    (_, a_end), (b_start, _) = agent.model.replies
    assert a_end <= b_start


class StallingReconnect:
    """A real transport whose first session drops at its first audio frame and whose reconnect hangs a while."""

    def __init__(self, inner: TtsTransport, stall_s: float) -> None:
        self._inner = inner
        self._stall_s = stall_s
        self.connects = 0
        self.reconnected_at: float | None = None

    async def connect(self) -> TtsConnection:
        self.connects += 1
        if self.connects == 1:
            return DropAtFirstAudio(await self._inner.connect())
        await asyncio.sleep(self._stall_s)
        conn = await self._inner.connect()
        self.reconnected_at = time.monotonic()
        return conn


class DropAtFirstAudio:
    def __init__(self, inner: TtsConnection) -> None:
        self._inner = inner

    async def send(self, frame: str) -> None:
        await self._inner.send(frame)

    async def receive(self) -> str | bytes:
        frame = await self._inner.receive()
        if isinstance(frame, bytes):
            await self._inner.aclose()
            raise TtsConnectionClosed("injected drop: the network went away")
        return frame

    async def aclose(self) -> None:
        await self._inner.aclose()


class Deltas:
    """A reply written at a steady pace (a stand-in for the model: what is under test is the turn)."""

    def __init__(self, pieces: list[str], gap_s: float) -> None:
        self._pieces = pieces
        self._gap_s = gap_s

    async def stream(self) -> AsyncIterator[str]:
        for piece in self._pieces:
            await asyncio.sleep(self._gap_s)
            yield piece

    def cancel(self) -> None:
        pass


def test_text_keeps_streaming_while_the_tts_session_reconnects(tts_server: Any) -> None:
    pieces = ["Hello. ", "Text ", "keeps ", "flowing ", "while ", "speech ", "waits."]  # little audio: quick
    transport = StallingReconnect(WsTransport(tts_server.ws_url), stall_s=4.0)

    async def go() -> list[tuple[float, AgentEvent]]:
        request = TurnRequest(request_id="stall", prompt="x")
        turn = Turn(request, Deltas(pieces, 0.05), transport, settings=TurnSettings())
        return [(time.monotonic(), event) async for event in turn.events()]

    timed = asyncio.run(asyncio.wait_for(go(), 300))
    texts = [(t, e) for t, e in timed if isinstance(e, TextDelta)]
    assert "".join(e.text for _, e in texts) == "".join(pieces)
    assert transport.reconnected_at is not None
    assert texts[-1][0] < transport.reconnected_at  # every delta was out while the reconnect still hung
    end = timed[-1][1]
    assert isinstance(end, AgentEnd) and end.status == "completed"
    assert any(isinstance(e, AudioChunk) for _, e in timed)  # the reconnected session spoke


class SlowToOpen:
    """A real transport whose session takes ``delay_s`` to open (a TLS handshake to a far endpoint, say)."""

    def __init__(self, inner: TtsTransport, delay_s: float) -> None:
        self._inner = inner
        self._delay_s = delay_s
        self.opened_at: float | None = None

    async def connect(self) -> TtsConnection:
        await asyncio.sleep(self._delay_s)
        conn = await self._inner.connect()
        self.opened_at = time.monotonic()
        return conn


def test_the_model_writes_while_the_tts_session_opens(tts_server: Any) -> None:
    pieces = ["Hello ", "there. ", "This ", "is ", "the ", "reply."]
    transport = SlowToOpen(WsTransport(tts_server.ws_url), delay_s=1.0)

    async def go() -> list[tuple[float, AgentEvent]]:
        turn = Turn(
            TurnRequest(request_id="slow-open", prompt="x"), Deltas(pieces, 0.02), transport, settings=TurnSettings()
        )
        return [(time.monotonic(), event) async for event in turn.events()]

    timed = asyncio.run(asyncio.wait_for(go(), 300))
    texts = [(t, e) for t, e in timed if isinstance(e, TextDelta)]
    assert "".join(e.text for _, e in texts) == "".join(pieces)
    assert transport.opened_at is not None
    assert texts[-1][0] < transport.opened_at  # the whole reply was out before the session was open
    end = timed[-1][1]
    assert isinstance(end, AgentEnd) and end.status == "completed" and end.sentences == 2
    assert any(isinstance(e, AudioChunk) for _, e in timed)  # the sentences written meanwhile were spoken


class NeverOpens:
    """A TTS that takes ``delay_s`` to refuse every session (so no speech at all: only the turn's own work runs)."""

    def __init__(self, delay_s: float) -> None:
        self._delay_s = delay_s

    async def connect(self) -> TtsConnection:
        await asyncio.sleep(self._delay_s)
        raise TtsUnavailableError("refused (a test TTS that never opens)")


def test_a_turn_waiting_on_its_tts_session_uses_no_cpu() -> None:
    """While the writer is done and the TTS session still opens (two refusals of 0.75 s each), the turn only
    waits: its engine must not spin on a finished task (it once took a core for the rest of every turn)."""

    async def go() -> tuple[list[AgentEvent], float, float]:
        turn = Turn(
            TurnRequest(request_id="idle", prompt="x"), Deltas(["Hi."], 0.0), NeverOpens(0.75), settings=TurnSettings()
        )
        cpu, wall = time.process_time(), time.monotonic()
        events = [event async for event in turn.events()]
        return events, time.process_time() - cpu, time.monotonic() - wall

    events, cpu_s, wall_s = asyncio.run(asyncio.wait_for(go(), 60))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hi."]
    assert isinstance(events[-1], AgentFailed) and events[-1].code == "tts_unavailable"
    assert wall_s >= 1.4
    assert cpu_s < 0.3 * wall_s, f"the turn took {cpu_s:.2f} s of CPU in {wall_s:.2f} s of waiting"


def test_an_unknown_voice_is_refused_before_any_text_and_a_known_one_is_checked_once(rig: Any) -> None:
    agent = rig(rate=400.0)

    async def go(voice: str) -> list[AgentEvent]:
        async with httpx.AsyncClient(timeout=120) as client:
            return (
                await collect_turn(client, agent.agent_url, AgentPayload(prompt="Hello.", options=SpeechOptions(voice)))
            ).events

    refused = asyncio.run(go("no_such_voice"))
    assert len(refused) == 1
    assert isinstance(refused[0], AgentFailed) and refused[0].code == "unknown_voice"
    assert "no_such_voice" in refused[0].message
    voice = agent.engine.default_voice
    for _ in range(2):
        events = asyncio.run(go(voice))
        assert isinstance(events[-1], AgentEnd) and events[-1].status == "completed"
    # one probe session for the unknown voice, one for the known one (remembered), one per turn
    assert agent.transport.opened == 4


def test_an_unknown_action_names_the_valid_ones(rig: Any) -> None:
    agent = rig(rate=400.0)
    response = httpx.post(f"{agent.agent_url}/invocations", json={"action": "sendMessage", "prompt": "hi"}, timeout=30)
    decoder = SseDecoder()
    events = [parse_event(e.data) for e in decoder.feed(response.content) + decoder.close()]
    assert len(events) == 1
    error = events[0]
    assert isinstance(error, AgentFailed) and error.code == "unknown_action"
    assert "'sendMessage'" in error.message and "'cancel'" in error.message and "'turn'" in error.message
