"""The real agent app and the real TTS container app (real int8 Kokoro model) on loopback.

Transports are wrapped (never replaced) to count sessions and the frames each carried, and to inject drops.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from relay_cli.agent_client import cancel_turn, collect_turn, decode_sse_events, stream_turn
from relay_core.agent.events import (
    AgentEnd,
    AgentEvent,
    AgentFailed,
    AgentPayload,
    AgentStart,
    AudioChunk,
    AudioStreamEnd,
    AudioStreamStart,
    TextDelta,
    TurnMode,
)
from relay_core.audio import b64decode, pcm_duration_s
from relay_core.speech_options import DEFAULT_SPEECH, SpeechOptions
from relay_local.servers import BackgroundServer
from relay_transport.base import TtsConnection, TtsTransport
from relay_transport.errors import TtsConnectionClosed
from relay_transport.ws import WsTransport
from voice_agent.app import create_app
from voice_agent.config import AgentConfig

pytestmark = pytest.mark.slow

PROMPT = "Hi there. The relay speaks now, while it writes. Bye!"
PIECES = ["Hi there.", "The relay speaks now, while it writes.", "Bye!"]
"""The sentences of PROMPT as the agent must send them (written out here, not computed by the segmenter)."""


@dataclass
class SessionLog:
    """What one TTS session carried."""

    sent: list[dict[str, Any]] = field(default_factory=list)
    audio_frames: int = 0

    @property
    def texts(self) -> list[str]:
        return [m["text"] for m in self.sent if m.get("type") == "synthesize"]

    @property
    def types(self) -> list[str]:
        return [str(m.get("type")) for m in self.sent]


class RecordingConnection:
    """Passes everything through to a real connection; records it; may drop after N audio frames."""

    def __init__(self, inner: TtsConnection, log: SessionLog, drop_after_audio: int | None) -> None:
        self._inner = inner
        self._log = log
        self._drop_after = drop_after_audio

    async def send(self, frame: str) -> None:
        self._log.sent.append(json.loads(frame))
        await self._inner.send(frame)

    async def receive(self) -> str | bytes:
        frame = await self._inner.receive()
        if isinstance(frame, bytes):
            self._log.audio_frames += 1
            if self._drop_after is not None and self._log.audio_frames > self._drop_after:
                await self._inner.aclose()
                raise TtsConnectionClosed("injected drop: the network went away")
        return frame

    async def aclose(self) -> None:
        await self._inner.aclose()


@dataclass
class RecordingTransport:
    """Wraps a real transport. ``drops[i]``: drop session i after that many audio frames (None = never)."""

    inner: TtsTransport
    drops: list[int | None] = field(default_factory=list)
    sessions: list[SessionLog] = field(default_factory=list)

    async def connect(self) -> TtsConnection:
        conn = await self.inner.connect()
        index = len(self.sessions)
        log = SessionLog()
        self.sessions.append(log)
        return RecordingConnection(conn, log, self.drops[index] if index < len(self.drops) else None)


@dataclass
class AgentUnderTest:
    url: str
    transport: RecordingTransport


@pytest.fixture
def make_agent(tts_server: Any, bedrock_env: Any) -> Iterator[Any]:
    """Start the real agent app (speak model: BedrockModel on the local stand-in's echo model, fast) against the
    real container, with a recording transport."""
    servers: list[BackgroundServer] = []

    def start(
        *, rate: float = 400.0, drops: list[int | None] | None = None, url: str | None = None, lang: str | None = None
    ) -> AgentUnderTest:
        transport = RecordingTransport(WsTransport(url or tts_server.ws_url, open_timeout_s=2.0), drops=drops or [])
        config = AgentConfig(tts_url=tts_server.ws_url, speak_tokens_per_s=rate, lang=lang)
        server = BackgroundServer(create_app(config, transport=transport), name="agent").start()
        servers.append(server)
        return AgentUnderTest(url=server.http_url, transport=transport)

    yield start
    for server in servers:
        server.stop()


def _run(agent_url: str, payload: AgentPayload, **kw: Any) -> tuple[list[AgentEvent], list[bytes]]:
    chunks: list[bytes] = []

    async def go() -> list[AgentEvent]:
        async with httpx.AsyncClient() as client:
            return [e async for e in stream_turn(client, agent_url, payload, on_chunk=chunks.append, **kw)]

    return asyncio.run(go()), chunks


def _expected_pcm(solo_pcm: Any, pieces: list[str], options: SpeechOptions = DEFAULT_SPEECH) -> bytes:
    """The PCM of ``pieces`` spoken as consecutive requests of one TTS session (the container's silence and
    first-fragment policies: each piece's pause follows the piece before it), from the session's ``solo_pcm``
    cache of the real engine's references (the sagemaker run of each case, test_agent_transports, reuses them)."""
    out = bytearray()
    previous: str | None = None
    for piece in pieces:
        out.extend(solo_pcm(piece, options=options, previous=previous))
        previous = piece
    return bytes(out)


def _check_order(events: list[AgentEvent], prompt: str) -> bytes:
    """The §3 order for one turn; returns the PCM of its audio chunks."""
    assert isinstance(events[0], AgentStart)
    rid = events[0].request_id
    assert all(e.request_id == rid for e in events)
    assert sum(isinstance(e, AgentEnd | AgentFailed) for e in events) == 1
    assert isinstance(events[-1], AgentEnd | AgentFailed)
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert [d.seq for d in deltas] == list(range(len(deltas)))
    assert "".join(d.text for d in deltas) == prompt
    kinds = [type(e) for e in events]
    chunks = [e for e in events if isinstance(e, AudioChunk)]
    if chunks:
        assert kinds.count(AudioStreamStart) == 1 and kinds.count(AudioStreamEnd) == 1
        start, end = kinds.index(AudioStreamStart), kinds.index(AudioStreamEnd)
        assert all(start < i < end for i, k in enumerate(kinds) if k is AudioChunk)
        assert [c.seq for c in chunks] == list(range(len(chunks)))
        stream_end = events[end]
        assert isinstance(stream_end, AudioStreamEnd)
        assert stream_end.total_chunks == len(chunks)
    return b"".join(b64decode(c.data) for c in chunks)


def test_bidi_turn_one_session_every_sentence_exact_pcm_and_rechunked_sse(
    make_agent: Any, onnx_engine: Any, solo_pcm: Any
) -> None:
    agent = make_agent()
    events, raw = _run(agent.url, AgentPayload(prompt=PROMPT, request_id="turn-bidi"))
    pcm = _check_order(events, PROMPT)
    end = events[-1]
    assert isinstance(end, AgentEnd) and end.status == "completed"
    # No voice was asked for: the stream names the voice the container actually used (its default).
    (stream_start,) = [e for e in events if isinstance(e, AudioStreamStart)]
    assert stream_start.voice == onnx_engine.default_voice
    # One TTS session for the turn, carrying every sentence as it was completed, then close.
    pieces = PIECES
    assert len(agent.transport.sessions) == 1
    session = agent.transport.sessions[0]
    assert session.texts == pieces
    assert session.types == ["synthesize"] * len(pieces) + ["close"]
    assert end.sentences == len(pieces)
    # The audio is exactly what the engine makes of those sentences.
    assert pcm == _expected_pcm(solo_pcm, pieces)
    stream_end = next(e for e in events if isinstance(e, AudioStreamEnd))
    assert stream_end.duration_s == pytest.approx(pcm_duration_s(len(pcm)), abs=1e-3)
    # Any re-chunking of the SSE body yields the same events.
    body = b"".join(raw)
    rng = random.Random(7)
    for _ in range(20):
        cuts = sorted(rng.sample(range(1, len(body)), k=min(len(body) - 1, rng.randint(1, 60))))
        parts = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
        assert decode_sse_events(parts) == events
    assert decode_sse_events([bytes([b]) for b in body[:4000]] + [body[4000:]]) == events


def test_batch_turn_sends_the_whole_reply_as_one_request(make_agent: Any, solo_pcm: Any) -> None:
    agent = make_agent()
    prompt = "Short one. And done."
    events, _ = _run(agent.url, AgentPayload(prompt=prompt, mode=TurnMode.BATCH))
    pcm = _check_order(events, prompt)
    assert isinstance(events[-1], AgentEnd) and events[-1].status == "completed"
    assert [s.types for s in agent.transport.sessions] == [["synthesize", "close"]]
    assert agent.transport.sessions[0].texts == [prompt]
    assert pcm == _expected_pcm(solo_pcm, [prompt])


def test_the_agents_lang_reads_replies_unless_the_payload_names_one(make_agent: Any, solo_pcm: Any) -> None:
    agent = make_agent(lang="es")
    prompt = "Hola, señor. Muchas gracias."
    spanish, _ = _run(agent.url, AgentPayload(prompt=prompt, mode=TurnMode.BATCH))
    italian, _ = _run(agent.url, AgentPayload(prompt=prompt, mode=TurnMode.BATCH, options=SpeechOptions(lang="it")))
    sent = [[m.get("lang") for m in s.sent if m.get("type") == "synthesize"] for s in agent.transport.sessions]
    assert sent == [["es"], ["it"]], "the agent's default fills in only a payload's missing lang"
    assert _check_order(spanish, prompt) == _expected_pcm(solo_pcm, [prompt], SpeechOptions(lang="es"))
    assert _check_order(italian, prompt) == _expected_pcm(solo_pcm, [prompt], SpeechOptions(lang="it"))
    assert _check_order(spanish, prompt) != _check_order(italian, prompt)


def test_cancel_stops_generation_and_tts_and_ends_cancelled(make_agent: Any) -> None:
    agent = make_agent(rate=10.0)
    prompt = "One sentence first. " + " ".join(f"Word{i}." for i in range(200))  # 40 s of writing
    session_id = "s" * 40

    async def go() -> tuple[list[AgentEvent], list[str]]:
        events: list[AgentEvent] = []
        cancelled: list[str] = []
        async with httpx.AsyncClient() as client:
            payload = AgentPayload(prompt=prompt, request_id="turn-cancel")
            async for event in stream_turn(client, agent.url, payload, session_id=session_id):
                events.append(event)
                if isinstance(event, AudioChunk) and not cancelled:
                    cancelled = await cancel_turn(client, agent.url, session_id=session_id)
        return events, cancelled

    events, cancelled = asyncio.run(go())
    assert cancelled == ["turn-cancel"]
    end = events[-1]
    assert isinstance(end, AgentEnd) and end.status == "cancelled"
    assert sum(isinstance(e, AgentEnd | AgentFailed) for e in events) == 1
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert len(text) < len(prompt)  # generation stopped
    kinds = [type(e) for e in events]
    assert kinds[-2] is AudioStreamEnd  # the audio stream is closed before the end; nothing after it
    session = agent.transport.sessions[0]
    assert "cancel" in session.types


def test_cancel_with_nothing_running_cancels_nothing(make_agent: Any) -> None:
    agent = make_agent()

    async def go() -> list[str]:
        async with httpx.AsyncClient() as client:
            return await cancel_turn(client, agent.url, session_id="x" * 40, request_id="nope")

    assert asyncio.run(go()) == []


def test_tts_refused_text_still_arrives_then_error(make_agent: Any) -> None:
    agent = make_agent(url="ws://127.0.0.1:9/invocations-bidirectional-stream")
    events, _ = _run(agent.url, AgentPayload(prompt=PROMPT))
    pcm = _check_order(events, PROMPT)
    assert pcm == b""
    end = events[-1]
    assert isinstance(end, AgentFailed) and end.code == "tts_unavailable"
    assert "Traceback" not in end.message


def test_drop_mid_turn_reconnects_once_and_resends_unfinished(make_agent: Any) -> None:
    agent = make_agent(drops=[0])
    events, _ = _run(agent.url, AgentPayload(prompt=PROMPT))
    _check_order(events, PROMPT)
    end = events[-1]
    assert isinstance(end, AgentEnd) and end.status == "completed"
    first, second = agent.transport.sessions
    assert first.audio_frames == 1  # dropped at its first audio frame
    pieces = PIECES
    # Nothing had finished: every sentence is spoken by the second session, in order, and no other text.
    assert second.texts == pieces
    assert first.texts == pieces[: len(first.texts)]
    assert second.types[-1] == "close"


def test_drop_twice_gives_an_error_after_all_the_text(make_agent: Any) -> None:
    agent = make_agent(drops=[0, 0])
    events, _ = _run(agent.url, AgentPayload(prompt=PROMPT))
    _check_order(events, PROMPT)
    end = events[-1]
    assert isinstance(end, AgentFailed) and end.code == "tts_failed"
    assert len(agent.transport.sessions) == 2


def test_invalid_payload_is_one_error_event(make_agent: Any) -> None:
    agent = make_agent()
    body = {"prompt": "", "mode": "bidi"}

    async def go() -> list[AgentEvent]:
        async with httpx.AsyncClient() as client:
            response = await client.post(f"{agent.url}/invocations", json=body)
            return decode_sse_events([response.content])

    events = asyncio.run(go())
    assert len(events) == 1
    assert isinstance(events[0], AgentFailed) and events[0].code == "invalid_payload"


def test_collect_turn_gives_text_pcm_and_time_to_first_audio(make_agent: Any) -> None:
    agent = make_agent()

    async def go() -> Any:
        async with httpx.AsyncClient() as client:
            return await collect_turn(client, agent.url, AgentPayload(prompt="Just this."))

    result = asyncio.run(go())
    assert result.text == "Just this."
    assert len(result.pcm) > 0
    assert result.time_to_first_audio_s is not None and 0 < result.time_to_first_audio_s <= result.elapsed_s
