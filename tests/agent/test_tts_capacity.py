"""A busy speech service makes turns wait, not fail (issue 19, fault 3).

The real TTS container app (real int8 Kokoro model) on loopback, admitting 4 sessions at once (it closes the rest
with 1013, try again later); 16 turns of the real turn engine at once, each over the real WebSocket transport. The
replies are short (one sentence each) to keep the synthesis cheap on two cores."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import pytest

from relay_core.agent.events import AgentEnd, AgentErrorCode, AgentEvent, AgentFailed, AudioChunk, TextDelta
from relay_core.audio import b64decode
from relay_transport.base import TtsConnection, TtsTransport
from relay_transport.errors import TtsConnectionClosed
from relay_transport.ws import WsTransport
from voice_agent.turn import Turn, TurnRequest, TurnSettings

pytestmark = pytest.mark.slow

SESSIONS = 4
TURNS = 16
REPLIES = ["Hi there.", "Good morning.", "Yes, of course.", "See you soon."]


class Reply:
    """A reply written at once, piece by piece (a stand-in for the model: what is under test is the turn)."""

    def __init__(self, text: str) -> None:
        self._pieces = re.findall(r"\S+\s*", text)

    async def stream(self) -> AsyncIterator[str]:
        for piece in self._pieces:
            await asyncio.sleep(0.01)
            yield piece

    def cancel(self) -> None:
        pass


@dataclass
class CountingTransport:
    """The real WebSocket transport, counting the sessions opened and the ones the container closed as full."""

    inner: TtsTransport
    opened: int = 0
    refused: int = 0

    async def connect(self) -> TtsConnection:
        conn = await self.inner.connect()
        self.opened += 1
        return _Counted(conn, self)


@dataclass
class _Counted:
    inner: TtsConnection
    owner: CountingTransport

    async def send(self, frame: str) -> None:
        await self.inner.send(frame)

    async def receive(self) -> str | bytes:
        try:
            return await self.inner.receive()
        except TtsConnectionClosed as exc:
            self.owner.refused += exc.busy
            raise

    async def aclose(self) -> None:
        await self.inner.aclose()


@dataclass
class Outcome:
    text: str = ""
    pcm: bytes = b""
    end: AgentEvent | None = None
    events: list[AgentEvent] = field(default_factory=list)


async def run_turn(n: int, reply: str, transport: TtsTransport, settings: TurnSettings) -> Outcome:
    turn = Turn(TurnRequest(request_id=f"cap-{n}", prompt="x"), Reply(reply), transport, settings=settings)
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
    """The TTS container admitting SESSIONS sessions at once."""
    with serve_tts(onnx_engine, max_sessions=SESSIONS) as server:
        yield server


@pytest.fixture(scope="module")
def alone(small_tts: Any) -> dict[str, bytes]:
    """Each reply's PCM from a turn that had the container to itself."""

    async def go() -> dict[str, bytes]:
        transport = WsTransport(small_tts.ws_url)
        return {reply: (await run_turn(0, reply, transport, TurnSettings())).pcm for reply in REPLIES}

    pcm = asyncio.run(asyncio.wait_for(go(), 120))
    assert all(len(p) > 4_800 for p in pcm.values())  # each reply is speech, not silence
    return pcm


HANDSHAKE_DEADLINE_S = 60.0
"""The opening handshake's deadline in these crowds: one that only catches a hang (16 turns retrying against a
container whose cores decode for four sessions, on a machine running other tests, can take seconds to answer)."""


def _run_all(small_tts: Any, settings: TurnSettings) -> tuple[list[Outcome], CountingTransport]:
    transport = CountingTransport(WsTransport(small_tts.ws_url, open_timeout_s=HANDSHAKE_DEADLINE_S))

    async def go() -> list[Outcome]:
        return list(await asyncio.gather(*(run_turn(n, REPLIES[n % 4], transport, settings) for n in range(TURNS))))

    return asyncio.run(asyncio.wait_for(go(), 240)), transport


def test_sixteen_turns_on_a_container_of_four_sessions_all_complete_with_the_audio_of_a_turn_alone(
    small_tts: Any, alone: dict[str, bytes]
) -> None:
    # each turn may wait up to a minute for room (the default is 20 s): on a test machine whose cores run other
    # tests too, four waves of four turns can take longer than the default, and what is under test is that they
    # wait rather than fail, and get the audio of a turn alone
    outcomes, transport = _run_all(small_tts, TurnSettings(tts_capacity_wait_s=60.0))
    for n, outcome in enumerate(outcomes):
        reply = REPLIES[n % 4]
        assert isinstance(outcome.end, AgentEnd) and outcome.end.status == "completed", outcome.end
        assert outcome.text == reply
        assert outcome.pcm == alone[reply], f"turn {n}: the audio differs from the same turn alone"
    assert transport.refused > 0, "the container turned sessions away: the turns waited for room"
    assert transport.opened == TURNS + transport.refused


def test_with_no_wait_the_turns_past_the_limit_end_with_tts_at_capacity(
    small_tts: Any, alone: dict[str, bytes]
) -> None:
    outcomes, transport = _run_all(small_tts, TurnSettings(tts_capacity_wait_s=0.0))
    refused = [o for o in outcomes if isinstance(o.end, AgentFailed)]
    spoken = [o for o in outcomes if isinstance(o.end, AgentEnd)]
    assert len(refused) + len(spoken) == TURNS
    assert refused and len(refused) == transport.refused
    assert len(spoken) >= SESSIONS
    for n, outcome in enumerate(outcomes):
        assert outcome.text == REPLIES[n % 4]  # the text is complete either way
        if isinstance(outcome.end, AgentFailed):
            assert outcome.end.code == AgentErrorCode.TTS_AT_CAPACITY
            assert "speech is at capacity" in outcome.end.message and "network" not in outcome.end.message
        else:
            assert outcome.pcm == alone[REPLIES[n % 4]]
