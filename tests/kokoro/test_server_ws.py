"""The TTS session over a real WebSocket (ARCHITECTURE §1), with the real int8 model on loopback."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosedOK

from kokoro_server.policy import SpeechPolicy
from kokoro_server.scheduled_speech import plan_segments
from relay_core import limits
from relay_core.tts.client import AudioReceived, FrameRefused, RequestEnded, RequestStarted, TtsClientSession
from relay_core.tts.messages import (
    SynthesisCancelled,
    SynthesisComplete,
    Synthesize,
    TtsErrorCode,
    TtsFailed,
)
from relay_core.word_timings import WORD_TIMINGS_TYPE, WordTiming, WordTimings, apply_word_timings, parse_word_timings

pytestmark = pytest.mark.slow

THREE_SENTENCES = "One. Two. Three."
STREAMED = (
    "The flight to Lisbon is delayed by about forty minutes because of fog at the departure airport. "
    "Your blood pressure readings from this week look stable and are all within the normal range."
)
"""Two long sentences: with streaming on, each segment's decoder runs in at least three chunks."""


@dataclass
class Peer:
    """A test client: the real websockets client driven through relay_core's client session."""

    ws: ClientConnection
    client: TtsClientSession = field(default_factory=TtsClientSession)
    events: list[tuple[float, Any]] = field(default_factory=list)
    raw_control: list[dict[str, Any]] = field(default_factory=list)
    frames: list[str | bytes] = field(default_factory=list)
    """Every frame received, in order."""
    started: float = field(default_factory=time.perf_counter)

    async def synthesize(self, text: str, request_id: str, *, binary: bool = True, **fields: Any) -> None:
        frame = self.client.synthesize(Synthesize(text=text, request_id=request_id, **fields))
        await self.ws.send(frame.encode() if binary else frame)

    async def send(self, frame: str | bytes) -> None:
        await self.ws.send(frame)

    async def pump_until(self, done: Callable[[], bool], within_s: float = 120.0) -> None:
        async with asyncio.timeout(within_s):
            while not done():
                frame = await self.ws.recv()
                now = time.perf_counter() - self.started
                self.frames.append(frame)
                if isinstance(frame, str):
                    self.raw_control.append(json.loads(frame))
                    if self.raw_control[-1]["type"] == WORD_TIMINGS_TYPE:
                        continue  # not the client session's: the agent's link takes these out first
                for event in self.client.receive_frame(frame):
                    self.events.append((now, event))

    def ended(self, request_id: str) -> RequestEnded | None:
        for _, event in self.events:
            if isinstance(event, RequestEnded) and event.request_id == request_id:
                return event
        return None

    def all_ended(self, *request_ids: str) -> Callable[[], bool]:
        return lambda: all(self.ended(rid) is not None for rid in request_ids)

    def pcm(self, request_id: str) -> bytes:
        return b"".join(e.pcm for _, e in self.events if isinstance(e, AudioReceived) and e.request_id == request_id)

    def audio_times(self, request_id: str) -> list[float]:
        return [t for t, e in self.events if isinstance(e, AudioReceived) and e.request_id == request_id]

    def session_errors(self) -> list[TtsFailed]:
        return [e.error for _, e in self.events if isinstance(e, FrameRefused)]

    def order(self) -> list[tuple[str, str]]:
        """(kind, request id) of every event, in arrival order."""
        out: list[tuple[str, str]] = []
        for _, event in self.events:
            if isinstance(event, RequestStarted):
                out.append(("start", event.message.request_id))
            elif isinstance(event, AudioReceived):
                out.append(("audio", event.request_id))
            elif isinstance(event, RequestEnded):
                out.append((event.outcome.type, event.request_id))
        return out


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.fixture(scope="module", params=["onnx", "torch"])
def tts_server(request: pytest.FixtureRequest, tts_server: Any, serve_tts: Any) -> Iterator[Any]:
    """Every session test runs against both engines: the onnx default, and ``--engine torch`` (KModel with the
    converted weights, on the CPU here)."""
    if request.param == "onnx":
        yield tts_server
        return
    with serve_tts(request.getfixturevalue("torch_engine")) as server:
        yield server


def test_text_and_binary_frames_untyped_message_sequential_with_ids(tts_server: Any) -> None:
    async def scenario() -> Peer:
        async with connect(tts_server.ws_url, max_size=None) as ws:
            peer = Peer(ws)
            await peer.synthesize("Hello there.", "a", binary=False)
            # the reference sample's shape: no type, binary frame
            await peer.send(json.dumps({"text": "Good morning.", "voice": "jf_alpha", "speed": 1.0}).encode())
            await peer.synthesize("See you.", "c", binary=True)
            await peer.pump_until(lambda: peer.ended("a") is not None and peer.ended("c") is not None)
            return peer

    peer = run(scenario())
    order = peer.order()
    starts = [rid for kind, rid in order if kind == "start"]
    assert starts[0] == "a"
    assert starts[2] == "c"
    assigned = starts[1]
    assert assigned.startswith("req-")
    # sequential: each request's frames sit between its start and its end, requests in arrival order
    for rid in ("a", assigned, "c"):
        kinds = [kind for kind, r in order if r == rid]
        assert kinds[0] == "start"
        assert kinds[-1] == "synthesis_complete"
        assert set(kinds[1:-1]) == {"audio"}
        first, last = order.index(("start", rid)), order.index(("synthesis_complete", rid))
        assert all(r == rid for _, r in order[first : last + 1])
        assert len(peer.pcm(rid)) > limits.SAMPLE_RATE  # at least half a second of speech
    # every control message carries the request id
    assert all(isinstance(m.get("request_id"), str) and m["request_id"] for m in peer.raw_control)
    complete = peer.ended("a")
    assert complete is not None
    assert isinstance(complete.outcome, SynthesisComplete)
    assert complete.outcome.audio_bytes == len(peer.pcm("a"))
    assert complete.outcome.total_duration_s == pytest.approx(len(peer.pcm("a")) / 48_000, abs=1e-3)


@pytest.mark.usefixtures("tts_server")  # its parameter picks the engine
def test_with_streaming_off_pcm_is_streamed_segment_by_segment(serve_tts: Any, request: pytest.FixtureRequest) -> None:
    """``KOKORO_STREAM_DECODER=off``: one binary frame per segment, each sent as soon as it is rendered."""
    engine = request.getfixturevalue(f"{request.node.callspec.params['tts_server']}_engine")
    with serve_tts(engine, stream_decoder=False) as server:
        peer, sent = run(_speak_and_time(server, THREE_SENTENCES))
    ended = peer.ended("multi")
    assert ended is not None
    outcome = ended.outcome
    assert isinstance(outcome, SynthesisComplete)
    assert outcome.segments == 3
    times = peer.audio_times("multi")
    assert len(times) == 3  # one binary frame per segment, all before synthesis_complete
    assert peer.order()[-1] == ("synthesis_complete", "multi")
    end_time = next(t for t, e in peer.events if e is ended)
    # the first segment arrives long before the whole text is done (about a third of the way)
    assert times[0] - sent < 0.8 * (end_time - sent)
    assert outcome.first_audio_s is not None
    assert outcome.first_audio_s < 0.8 * outcome.elapsed_s


STREAMING_CASES = [
    pytest.param("onnx", False, False, id="onnx-plain-on"),
    pytest.param("onnx", False, True, id="onnx-plain-every"),
    pytest.param("onnx", True, False, id="onnx-timed-on"),
    pytest.param("onnx", True, True, id="onnx-timed-every"),
    pytest.param("torch", True, False, id="torch-timed-on"),
]
"""Every mode on the onnx engine; on torch, the one case that runs each of its own decodes under the session: the
first sound streamed, the later segments decoded whole, with word timings from both. What ``on``/``every`` and
plain/timed change (which segments stream, the timing messages) is the session's code, the same on both engines
(torch's other three cases, 60 of the module's seconds, ran that same code on the same decodes)."""


@pytest.mark.parametrize(("tts_server", "timings", "every"), STREAMING_CASES, indirect=["tts_server"])
@pytest.mark.usefixtures("tts_server")  # its parameter picks the engine
def test_with_streaming_on_a_segment_goes_out_chunk_by_chunk(
    serve_tts: Any, request: pytest.FixtureRequest, timings: bool, every: bool
) -> None:
    """``KOKORO_STREAM_DECODER=every``: each long segment's PCM leaves in several binary frames as the decoder's
    chunks exist; ``on`` (the default): the first segment's (the session's first sound), then one frame per
    segment. With or
    without word timings; a timed request's ``word_timings`` frames each come right before a binary frame, time
    every word before its audio, and, applied in order, give every written word once, in order, final."""
    engine_name = request.node.callspec.params["tts_server"]
    engine = request.getfixturevalue(f"{engine_name}_engine")
    with serve_tts(engine, stream_decoder=True, stream_every_segment=every) as server:
        peer, _ = run(_speak_and_time(server, STREAMED, timings=timings))
    ended = peer.ended("multi")
    assert ended is not None
    outcome = ended.outcome
    assert isinstance(outcome, SynthesisComplete)
    times = peer.audio_times("multi")
    policy = SpeechPolicy(stream_decoder=True, stream_every_segment=every)
    planned = plan_segments(engine, STREAMED, voice=engine.default_voice, speed=1.0, fragment_words=4, previous=None)
    if every:
        assert len(times) >= 5  # several binary frames per segment (two or three here), all before synthesis_complete
    else:
        assert len(planned) == 3  # the first fragment, the rest of the first sentence, the second sentence
        assert len(times) >= 4  # several frames for the first segment, then one per segment
        if engine_name == "onnx" and not timings:
            solo_pcm = request.getfixturevalue("solo_pcm")  # the offline reference, each decode once per session
            reference = solo_pcm(STREAMED, policy=policy)
            assert peer.pcm("multi") == reference
            pieces = [e.pcm for _, e in peer.events if isinstance(e, AudioReceived) and e.request_id == "multi"]
            whole = solo_pcm(STREAMED)
            later = b"".join(pieces[-2:])
            assert later == whole[len(whole) - len(later) :], "the segments after the first sound are decoded whole"
    assert outcome.segments == len(times)  # the session counts the binary frames it sent
    assert peer.order()[-1] == ("synthesis_complete", "multi")
    assert outcome.first_audio_s is not None
    assert outcome.first_audio_s < 0.5 * outcome.elapsed_s
    timed = [m for m in peer.raw_control if m["type"] == WORD_TIMINGS_TYPE]
    if not timings:
        assert timed == []
        return
    assert len(timed) > 2, "a streamed segment's words come in several messages, as its audio does"
    words: list[WordTiming] = []
    heard = 0
    for frame in peer.frames:
        if isinstance(frame, bytes):
            heard += len(frame)
        elif json.loads(frame)["type"] == WORD_TIMINGS_TYPE:
            known = len(words)
            apply_word_timings(words, parse_word_timings(frame))
            first_timed = words[known:]
            assert all(w.start_s >= heard / (2 * limits.SAMPLE_RATE) - 1e-3 for w in first_timed), (
                "a word is timed before its audio"
            )
    assert [w.word for w in words] == STREAMED.split()
    assert all(w.final for w in words), "every estimate was replaced by its final timing"
    WordTimings("check", tuple(words))  # ordered, never overlapping
    assert words[-1].end_s <= len(peer.pcm("multi")) / (2 * limits.SAMPLE_RATE) + 1e-3
    kinds = [isinstance(f, bytes) or json.loads(f)["type"] for f in peer.frames]
    for index, kind in enumerate(kinds):
        if kind == WORD_TIMINGS_TYPE:
            assert kinds[index + 1] is True, "each word_timings frame comes right before a binary frame"


async def _speak_and_time(server: Any, text: str, *, timings: bool = False) -> tuple[Peer, float]:
    async with connect(server.ws_url, max_size=None) as ws:
        peer = Peer(ws)
        sent = time.perf_counter() - peer.started
        await peer.synthesize(text, "multi", timings=timings)
        await peer.pump_until(peer.all_ended("multi"))
        return peer, sent


def test_cancel_queued_and_running_requests(tts_server: Any) -> None:
    async def scenario() -> Peer:
        async with connect(tts_server.ws_url, max_size=None) as ws:
            peer = Peer(ws)
            await peer.synthesize(THREE_SENTENCES, "running")
            await peer.synthesize("Hello there.", "kept")
            await peer.synthesize("Never spoken.", "queued")
            await peer.pump_until(lambda: bool(peer.audio_times("running")))
            await peer.send(peer.client.cancel("queued"))
            await peer.send(peer.client.cancel("running"))
            await peer.pump_until(peer.all_ended("running", "kept", "queued"))
            # cancel without an id drops everything queued and running
            await peer.synthesize(THREE_SENTENCES, "all-1")
            await peer.synthesize("Also dropped.", "all-2")
            await peer.send(peer.client.cancel())
            await peer.pump_until(peer.all_ended("all-1", "all-2"))
            return peer

    peer = run(scenario())
    running, queued, kept = peer.ended("running"), peer.ended("queued"), peer.ended("kept")
    assert running is not None
    assert queued is not None
    assert kept is not None
    assert isinstance(running.outcome, SynthesisCancelled)
    assert running.outcome.audio_bytes == len(peer.pcm("running"))
    assert len(peer.audio_times("running")) < 3  # stopped at a segment boundary
    assert isinstance(queued.outcome, SynthesisCancelled)
    assert ("start", "queued") not in peer.order()
    assert isinstance(kept.outcome, SynthesisComplete)
    for rid in ("all-1", "all-2"):
        ended = peer.ended(rid)
        assert ended is not None
        assert isinstance(ended.outcome, SynthesisCancelled)
    assert peer.session_errors() == []


def test_close_finishes_the_queue_then_closes_with_1000(tts_server: Any) -> None:
    async def scenario() -> tuple[Peer, int | None]:
        async with connect(tts_server.ws_url, max_size=None) as ws:
            peer = Peer(ws)
            await peer.synthesize("Hello there.", "first")
            await peer.synthesize("Goodbye.", "second")
            await peer.send(peer.client.close())
            await peer.synthesize("Too late.", "late")
            with pytest.raises(ConnectionClosedOK) as closed:
                await peer.pump_until(lambda: False)
            return peer, closed.value.rcvd.code if closed.value.rcvd else None

    peer, code = run(scenario())
    assert code == 1000
    for rid in ("first", "second"):
        ended = peer.ended(rid)
        assert ended is not None
        assert isinstance(ended.outcome, SynthesisComplete)
        assert peer.pcm(rid)
    late = peer.ended("late")
    assert late is not None
    assert isinstance(late.outcome, TtsFailed)
    assert late.outcome.code == TtsErrorCode.SESSION_CLOSING


def test_close_on_an_idle_session_closes_at_once(tts_server: Any) -> None:
    async def scenario() -> int | None:
        async with connect(tts_server.ws_url) as ws:
            await ws.send(b'{"type": "close"}')
            with pytest.raises(ConnectionClosedOK) as closed:
                await ws.recv()
            return closed.value.rcvd.code if closed.value.rcvd else None

    assert run(scenario()) == 1000


def test_bad_input_answers_error_and_the_session_goes_on(tts_server: Any) -> None:
    bad_frames: list[tuple[str | bytes, str, str | None]] = [
        (b"{not json", TtsErrorCode.INVALID_JSON, None),
        (b"\xff\xfe", TtsErrorCode.INVALID_JSON, None),
        ('{"type": "dance", "request_id": "t1"}', TtsErrorCode.UNKNOWN_TYPE, "t1"),
        (json.dumps({"text": "x" * (limits.MAX_MESSAGE_BYTES + 10)}).encode(), TtsErrorCode.LIMIT_EXCEEDED, None),
        (
            json.dumps({"text": "y" * (limits.MAX_TEXT_CHARS + 1), "request_id": "t2"}),
            TtsErrorCode.LIMIT_EXCEEDED,
            "t2",
        ),
        (json.dumps({"text": "Hi.", "speed": 9.0, "request_id": "t3"}), TtsErrorCode.INVALID_FIELD, "t3"),
        (json.dumps({"text": "Hi.", "voice": "zz_nobody", "request_id": "t4"}), TtsErrorCode.UNKNOWN_VOICE, "t4"),
        (
            json.dumps({"text": "Hi.", "request_id": "r" * (limits.MAX_REQUEST_ID_CHARS + 1)}),
            TtsErrorCode.LIMIT_EXCEEDED,
            "r" * (limits.MAX_REQUEST_ID_CHARS + 1),
        ),
        (json.dumps({"text": "   ", "request_id": "t5"}), TtsErrorCode.INVALID_FIELD, "t5"),
        (json.dumps({"type": "cancel", "request_id": "ghost"}), TtsErrorCode.UNKNOWN_REQUEST, "ghost"),
    ]

    async def scenario() -> list[dict[str, Any]]:
        async with connect(tts_server.ws_url, max_size=None) as ws:
            replies: list[dict[str, Any]] = []
            for frame, _, _ in bad_frames:
                await ws.send(frame)
                reply = await asyncio.wait_for(ws.recv(), 30)
                assert isinstance(reply, str)
                replies.append(json.loads(reply))
            peer = Peer(ws)
            await peer.synthesize("Still here.", "ok")
            await peer.pump_until(peer.all_ended("ok"))
            ended = peer.ended("ok")
            assert ended is not None
            assert isinstance(ended.outcome, SynthesisComplete)
            assert peer.pcm("ok")
            return replies

    replies = run(scenario())
    for (_, code, rid), reply in zip(bad_frames, replies, strict=True):
        assert reply["type"] == "error"
        assert reply["message"]
        assert reply["code"] == code, reply
        assert reply.get("request_id") == rid
    voice_error = replies[6]["message"]
    assert "jf_alpha" in voice_error  # names the voices there are


def test_websocket_ping_is_answered_while_a_long_request_renders(tts_server: Any) -> None:
    """Inference never blocks the event loop: a ping sent after the first segment is answered before the
    request's last segment (it would wait for the whole render if inference ran on the loop)."""

    async def scenario() -> Peer:
        async with connect(tts_server.ws_url, max_size=None) as ws:
            peer = Peer(ws)
            await peer.synthesize(THREE_SENTENCES, "long")
            await peer.pump_until(lambda: bool(peer.audio_times("long")))
            pong = asyncio.ensure_future(await ws.ping())
            pong.add_done_callback(lambda _f: peer.events.append((time.perf_counter() - peer.started, "pong")))
            await peer.pump_until(peer.all_ended("long"))
            async with asyncio.timeout(30):
                await pong
            return peer

    peer = run(scenario())
    order = [event if isinstance(event, str) else type(event).__name__ for _, event in peer.events]
    assert "pong" in order
    assert order.index("pong") < order.index("RequestEnded")
    assert order[order.index("pong") :].count("AudioReceived") >= 1  # answered while segments were still coming
