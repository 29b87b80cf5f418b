"""A busy speech service makes turns wait their turn, not fail, on both transports (issue 19 fault 3, issue 31 §1).

The real TTS container app (real int8 Kokoro model) on loopback, serving 4 sessions at once and queueing the rest
first come first served, told in-band (``queued``); the real turn engine over the real WebSocket transport, and
over the real SageMaker transport through the local SageMaker front end (where a close code would only reach the
agent as a stream error). The turns that find the container full say ``speech_waiting`` and then speak exactly what
a turn alone speaks, in their order of arrival; past the container's bound on the wait they end ``tts_at_capacity``
with their text complete."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest

from relay_core.agent.events import (
    AgentEnd,
    AgentErrorCode,
    AgentEvent,
    AgentFailed,
    AudioChunk,
    SpeechWaiting,
    TextDelta,
)
from relay_core.audio import b64decode
from relay_local.sagemaker_frontend import SageMakerFrontEnd
from relay_transport.base import TtsConnection, TtsTransport
from relay_transport.sagemaker import SageMakerTransport
from relay_transport.ws import WsTransport
from voice_agent.turn import Turn, TurnRequest, TurnSettings

pytestmark = pytest.mark.slow

SESSIONS = 4
TURNS = 16
REPLIES = ["Hi there.", "Good day.", "Yes, of course.", "See you."]
"""One short sentence each, to keep the synthesis cheap on two cores: three of them fit the container's first
decode window, one ("Yes, of course.") takes two, so the sessions' chunks still interleave in its scheduler."""
HANG_S = 120.0
"""Deadlines that only catch a hang (a crowd of turns on a machine running other tests can take a while)."""
SHORT_WAIT_S = 0.5
"""The bound on a session's wait in the container of the at-capacity case."""


class Reply:
    """A reply written at once, piece by piece (a stand-in for the model: what is under test is the turn). With a
    ``hold``, the reply ends only once it is set: the turn keeps its TTS session, so its slot, until then."""

    def __init__(self, text: str, hold: asyncio.Event | None = None) -> None:
        self._pieces = re.findall(r"\S+\s*", text)
        self._hold = hold

    async def stream(self) -> AsyncIterator[str]:
        for piece in self._pieces:
            await asyncio.sleep(0.01)
            yield piece
        if self._hold is not None:
            await self._hold.wait()

    def cancel(self) -> None:
        pass


@dataclass
class FirstFrames:
    """A transport that notes when each session it opened (numbered in the order asked for) received its first frame
    (so a test can let turns arrive at the container one after another)."""

    inner: TtsTransport
    opened: int = 0
    _seen: dict[int, asyncio.Event] = field(default_factory=dict)

    def first_frame(self, n: int) -> asyncio.Event:
        """Set once session ``n`` (0, 1, ...) received a frame."""
        return self._seen.setdefault(n, asyncio.Event())

    async def connect(self) -> TtsConnection:
        seen = self.first_frame(self.opened)
        self.opened += 1
        return _Noted(await self.inner.connect(), seen)


@dataclass
class _Noted:
    inner: TtsConnection
    seen: asyncio.Event

    async def send(self, frame: str) -> None:
        await self.inner.send(frame)

    async def receive(self) -> str | bytes:
        frame = await self.inner.receive()
        self.seen.set()
        return frame

    async def aclose(self) -> None:
        await self.inner.aclose()


@dataclass
class Outcome:
    text: str = ""
    pcm: bytes = b""
    end: AgentEvent | None = None
    events: list[AgentEvent] = field(default_factory=list)

    @property
    def waited(self) -> bool:
        return any(isinstance(event, SpeechWaiting) for event in self.events)


async def run_turn(n: int, reply: Reply, transport: TtsTransport, settings: TurnSettings) -> Outcome:
    turn = Turn(TurnRequest(request_id=f"cap-{n}", prompt="x"), reply, transport, settings=settings)
    outcome = Outcome()
    pcm = bytearray()
    async for event in turn.events():
        outcome.events.append(event)
        if isinstance(event, TextDelta):
            outcome.text += event.text
        elif isinstance(event, AudioChunk):
            pcm.extend(b64decode(event.data))
    outcome.pcm = bytes(pcm)
    outcome.end = outcome.events[-1]
    return outcome


@pytest.fixture(scope="module")
def small_tts(onnx_engine: Any, serve_tts: Callable[..., AbstractContextManager[Any]]) -> Iterator[Any]:
    """The TTS container serving SESSIONS sessions at once (the default, long bound on a queued session's wait)."""
    with serve_tts(onnx_engine, max_sessions=SESSIONS) as server:
        yield server


@pytest.fixture(scope="module")
def impatient_tts(onnx_engine: Any, serve_tts: Callable[..., AbstractContextManager[Any]]) -> Iterator[Any]:
    """The same container with a short bound on the wait (SHORT_WAIT_S)."""
    with serve_tts(onnx_engine, max_sessions=SESSIONS, queue_wait_s=SHORT_WAIT_S) as server:
        yield server


@pytest.fixture(scope="module")
def alone(small_tts: Any) -> dict[str, bytes]:
    """Each reply's PCM from a turn that had the container to itself."""

    async def go() -> dict[str, bytes]:
        transport = WsTransport(small_tts.ws_url)
        return {text: (await run_turn(0, Reply(text), transport, TurnSettings())).pcm for text in REPLIES}

    pcm = asyncio.run(asyncio.wait_for(go(), HANG_S))
    assert all(len(p) > 4_800 for p in pcm.values())  # each reply is speech, not silence
    return pcm


@pytest.fixture(params=["ws", "sagemaker"])
def connect_to(request: pytest.FixtureRequest, sagemaker_tls_dir: Path) -> Iterator[Callable[[Any], TtsTransport]]:
    """``connect_to(server)``: a fresh transport to a TTS server over the WebSocket, or over the SageMaker transport
    through a local SageMaker front end of its own (SigV4 checked) in front of that server."""
    fronts: list[SageMakerFrontEnd] = []

    def make(server: Any) -> TtsTransport:
        if request.param == "ws":
            return WsTransport(server.ws_url, open_timeout_s=HANG_S)
        front = SageMakerFrontEnd(server.ws_url, endpoint_name="kokoro-tts", tls_dir=sagemaker_tls_dir).start()
        fronts.append(front)
        return SageMakerTransport(
            "kokoro-tts", endpoint_uri=front.endpoint_url, session=boto3.Session(), open_timeout_s=HANG_S
        )

    if request.param == "sagemaker":
        request.getfixturevalue("sagemaker_env")  # the CA, credentials and region a SageMaker client needs
    try:
        yield make
    finally:
        for front in fronts:
            front.stop()


async def until_ping(http_url: str, *, sessions: int, queued: int) -> None:
    """Wait until the container serves ``sessions`` sessions and queues ``queued`` more (asking its ``/ping``
    through one client: a client each time cost more CPU than the synthesis the test waits for)."""
    async with httpx.AsyncClient(base_url=http_url, timeout=HANG_S) as http:
        while True:
            body: dict[str, Any] = (await http.get("/ping")).json()
            if body.get("sessions") == sessions and body.get("queued", 0) == queued:
                return
            await asyncio.sleep(0.02)


async def crowd(server: Any, transport: FirstFrames, turns: int, *, all_queue: bool) -> list[Outcome]:
    """SESSIONS turns that take every slot and keep it; then the others, one after another (each once the previous
    one's session heard from the container: its ``queued``), which queue. ``all_queue``: once all of them wait in
    line, the first SESSIONS turns end and the queue drains; else those turns end only once the others have
    ended (past a short bound on the wait)."""
    hold = asyncio.Event()
    settings = TurnSettings()
    tasks = [
        asyncio.create_task(run_turn(n, Reply(REPLIES[n % 4], hold), transport, settings)) for n in range(SESSIONS)
    ]
    await until_ping(server.http_url, sessions=SESSIONS, queued=0)
    for n in range(SESSIONS, turns):
        tasks.append(asyncio.create_task(run_turn(n, Reply(REPLIES[n % 4]), transport, settings)))
        await transport.first_frame(n).wait()
    if all_queue:
        await until_ping(server.http_url, sessions=SESSIONS, queued=turns - SESSIONS)
    else:
        await asyncio.wait(tasks[SESSIONS:])
    hold.set()
    return list(await asyncio.gather(*tasks))


def admissions(caplog: pytest.LogCaptureFixture) -> tuple[list[str], list[str]]:
    """The container's sessions in the order they joined its queue, and in the order they were admitted."""
    joined, admitted = [], []
    for record in caplog.records:
        if record.name == "kokoro_server.ws_session" and record.msg.startswith("session %s queued"):
            joined.append(str(record.args[0]))  # type: ignore[index]
        elif record.name == "kokoro_server.ws_session" and record.msg.startswith("session %s admitted"):
            admitted.append(str(record.args[0]))  # type: ignore[index]
    return joined, admitted


def test_sixteen_turns_on_a_container_of_four_sessions_all_speak_as_alone_in_their_order_of_arrival(
    small_tts: Any, alone: dict[str, bytes], connect_to: Callable[[Any], TtsTransport], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="kokoro_server.ws_session")
    transport = FirstFrames(connect_to(small_tts))
    outcomes = asyncio.run(asyncio.wait_for(crowd(small_tts, transport, TURNS, all_queue=True), 2 * HANG_S))
    for n, outcome in enumerate(outcomes):
        reply = REPLIES[n % 4]
        assert isinstance(outcome.end, AgentEnd) and outcome.end.status == "completed", outcome.end
        assert outcome.text == reply
        assert outcome.pcm == alone[reply], f"turn {n}: the audio differs from the same turn alone"
        assert outcome.waited == (n >= SESSIONS), f"turn {n}: speech_waiting only for the turns that queued"
    assert transport.opened == TURNS  # one session per turn: no reconnect, no retry
    joined, admitted = admissions(caplog)
    assert len(joined) == TURNS - SESSIONS
    assert admitted == joined, "the container admitted its queue first come first served"


def test_past_the_bound_on_the_wait_the_turns_in_line_end_tts_at_capacity_with_their_text(
    impatient_tts: Any, alone: dict[str, bytes], connect_to: Callable[[Any], TtsTransport]
) -> None:
    transport = FirstFrames(connect_to(impatient_tts))
    outcomes = asyncio.run(asyncio.wait_for(crowd(impatient_tts, transport, 2 * SESSIONS, all_queue=False), 2 * HANG_S))
    for n, outcome in enumerate(outcomes):
        assert outcome.text == REPLIES[n % 4]  # the text is complete either way
        if n < SESSIONS:
            assert isinstance(outcome.end, AgentEnd) and outcome.pcm == alone[REPLIES[n % 4]]
        else:
            assert isinstance(outcome.end, AgentFailed), outcome.end
            assert outcome.end.code == AgentErrorCode.TTS_AT_CAPACITY
            assert "speech is at capacity" in outcome.end.message
            assert outcome.waited and not outcome.pcm
