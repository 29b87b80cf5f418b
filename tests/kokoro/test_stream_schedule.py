"""Which segments stream (issue 21, item 5): only the segment a listener is waiting on, on the real int8 model.

With ``KOKORO_STREAM_DECODER=on`` a segment is decoded chunk by chunk only while its request's listener has heard
nothing yet (the first sound of a session); every later segment is decoded whole, so it costs what it costs with
streaming off and gives the same PCM bit for bit. The choice reads only the request's plan and audio: several
sessions at once give each session the PCM it gets alone, and the scheduler still interleaves the chunks across
sessions, first chunks of waiting sessions first.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pytest

from kokoro_server.config import ConfigError, ServerConfig
from kokoro_server.engines import Engine, Segment
from kokoro_server.engines.base import Rendered, StreamedRender
from kokoro_server.engines.speech_engine import DelegatingEngine
from kokoro_server.policy import SpeechPolicy
from kokoro_server.scheduled_speech import ScheduledSpeech
from kokoro_server.scheduler import Scheduler, SchedulerSession
from relay_core.speech_options import SpeechOptions

VOICE = "jf_alpha"
FIRST = "The flight to Lisbon is delayed by forty minutes."
SECOND = "Your blood pressure readings look stable this week."
SESSIONS = (
    (f"{FIRST} {SECOND}", "Thanks for waiting."),
    (SECOND, FIRST),
    ("Tomorrow looks dry and mild.", "Enjoy the walk."),
)
"""Three sessions of two requests each (the first with two sentences), as a session plan in the load bench. The
sentences are about three seconds each: long enough for the first sound to stream in several chunks and for a
sentence after "Sure." to stream, short enough that the model's work stays small (every claim here is about
which segments stream and whose PCM it is, not about long speech)."""
ON = SpeechPolicy(stream_decoder=True)
EVERY = SpeechPolicy(stream_decoder=True, stream_every_segment=True)
OFF = SpeechPolicy(stream_decoder=False, first_fragment_words=None)
"""Streaming off, planned as streaming on plans (no first-fragment cut), so the segments line up."""
SoloPcm = Callable[..., bytes]
"""tests/conftest.py ``solo_pcm``: the PCM a session alone gets, cached for the session."""


@pytest.mark.parametrize(
    ("policy", "session_heard", "sent_s", "streams"),
    [
        (OFF, False, 0.0, False),
        (ON, False, 0.0, True),
        (ON, True, 0.0, False),
        (ON, False, 1.0, True),  # 1 s sent, the segment's 100 tokens about 5.6 s: a whole decode could outlast it
        (ON, False, 3.0, False),
        (ON, True, 1.0, False),
        (SpeechPolicy(stream_decoder=True, stream_ahead_ratio=0), False, 0.1, False),
        (EVERY, False, 0.0, True),
        (EVERY, True, 3.0, True),
    ],
)
def test_a_segment_streams_only_while_its_listener_waits(
    policy: SpeechPolicy, session_heard: bool, sent_s: float, streams: bool
) -> None:
    """Nothing heard: the first sound streams; after it, a segment streams only while the request's audio sent is
    shorter than ``stream_ahead_ratio`` of the segment's estimated length (100 tokens: 5.6 s); a session that had
    heard something streams nothing (``every``: everything)."""
    assert policy.streams_segment(session_heard=session_heard, sent_s=sent_s, tokens=100, speed=1.0) is streams


def test_the_estimate_scales_with_speed() -> None:
    assert ON.streams_segment(session_heard=False, sent_s=2.0, tokens=100, speed=1.0)
    assert not ON.streams_segment(session_heard=False, sent_s=2.0, tokens=100, speed=2.0)


@pytest.mark.parametrize(
    ("value", "on", "every"),
    [("on", True, False), ("every", True, True), ("EVERY", True, True), ("off", False, False), ("1", True, False)],
)
def test_kokoro_stream_decoder_is_on_every_or_off(value: str, on: bool, every: bool) -> None:
    config = ServerConfig.from_env({"KOKORO_STREAM_DECODER": value})
    assert (config.stream_decoder, config.stream_every_segment) == (on, every)
    policy = config.speech_policy
    assert (policy.stream_decoder, policy.stream_every_segment) == (on, every)


def test_kokoro_stream_decoder_refuses_other_values() -> None:
    with pytest.raises(ConfigError, match="on, every or off"):
        ServerConfig.from_env({"KOKORO_STREAM_DECODER": "sometimes"})


@dataclass
class _DecodeLog:
    """Every decoder call, in the order the worker ran them: (session label, segment text, chunk number)."""

    calls: list[tuple[str, str, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, label: str, text: str, chunk: int) -> None:
        with self.lock:
            self.calls.append((label, text, chunk))


class _LoggedEngine(DelegatingEngine):
    """The real engine, each decoder call logged under this session's label (the audio passes through)."""

    def __init__(self, inner: Engine, label: str, log: _DecodeLog) -> None:
        super().__init__(inner)
        self._label = label
        self._log = log

    def render_timed(self, segment: Segment, *, voice: str, speed: float) -> Rendered:
        rendered = self.inner.render_timed(segment, voice=voice, speed=speed)
        self._log.add(self._label, segment.text, 0)
        return rendered

    def render_stream(self, segment: Segment, *, voice: str, speed: float) -> StreamedRender:
        streamed = self.inner.render_stream(segment, voice=voice, speed=speed)
        return StreamedRender(
            durations=streamed.durations,
            chunks=self._logged(segment.text, streamed.chunks),
            frame_samples=streamed.frame_samples,
        )

    def _logged(self, text: str, chunks: Iterator[npt.NDArray[np.float32]]) -> Iterator[npt.NDArray[np.float32]]:
        for number, chunk in enumerate(chunks, start=1):
            self._log.add(self._label, text, number)
            yield chunk


@dataclass
class _Run:
    """Every session of a plan spoken at once: each session's requests' PCM pieces as they came out, each
    session's first request's segment count, and the decoder calls in the order the worker ran them."""

    pieces: list[list[list[bytes]]]
    first_segments: list[int]
    calls: list[tuple[str, str, int]]


async def _session(
    engine: Engine,
    scheduler: Scheduler,
    label: str,
    texts: tuple[str, ...],
    log: _DecodeLog,
    planned: asyncio.Event,
    start: asyncio.Event,
) -> tuple[list[list[bytes]], int]:
    """One session's requests in order: each request's PCM pieces as they came out, and the first request's
    segment count. ``planned`` is set once the first request is planned; nothing is spoken before ``start``."""
    session = SchedulerSession(label)
    logged = _LoggedEngine(engine, label, log)
    out: list[list[bytes]] = []
    first_segments = 0
    for index, text in enumerate(texts):
        speech = ScheduledSpeech(logged, scheduler, session, text=text, options=SpeechOptions(VOICE))
        segments = await speech.plan()
        if index == 0:
            first_segments = segments
            planned.set()
            await start.wait()
        out.append([pcm async for pcm in speech.pcm_segments()])
    return out, first_segments


def _run(engine: Engine, policy: SpeechPolicy, sessions: tuple[tuple[str, ...], ...]) -> _Run:
    """Every session at once on one worker (the onnx default), started together once each has planned its first
    request."""
    log = _DecodeLog()

    async def all_at_once() -> list[tuple[list[list[bytes]], int]]:
        scheduler = Scheduler(workers=1, name="load", speech=policy)
        start = asyncio.Event()
        planned = [asyncio.Event() for _ in sessions]
        try:
            tasks = [
                asyncio.create_task(_session(engine, scheduler, f"s{i}", texts, log, planned[i], start))
                for i, texts in enumerate(sessions)
            ]
            await asyncio.wait_for(asyncio.gather(*(event.wait() for event in planned)), 120)
            start.set()
            return list(await asyncio.gather(*tasks))
        finally:
            scheduler.shutdown()

    done = asyncio.run(all_at_once())
    return _Run([pieces for pieces, _ in done], [segments for _, segments in done], log.calls)


def _alone(solo_pcm: SoloPcm, texts: tuple[str, ...], policy: SpeechPolicy) -> list[bytes]:
    """Each request's PCM when its session is alone, request after request (each after the one before has been
    heard): the reference, from the session's solo PCM cache (tests/conftest.py ``solo_pcm``)."""
    previous = (None, *texts[:-1])
    return [
        solo_pcm(text, options=SpeechOptions(VOICE), policy=policy, previous=p)
        for text, p in zip(texts, previous, strict=True)
    ]


def _by_segment(calls: list[tuple[str, str, int]], label: str) -> dict[str, list[int]]:
    """One session's decoder calls: its segments' texts in the order first decoded, each with its chunk numbers
    (0: decoded whole)."""
    chunks: dict[str, list[int]] = {}
    for who, text, chunk in calls:
        if who == label:
            chunks.setdefault(text, []).append(chunk)
    return chunks


@pytest.fixture(scope="module")
def on_run(onnx_engine: Engine) -> _Run:
    """The three sessions of SESSIONS at once with streaming ``on``, run once for the module: the first-sound test
    reads its PCM and decoder calls, the interleaving test its decoder calls, the ``every`` test its PCM and
    decoder calls."""
    return _run(onnx_engine, ON, SESSIONS)


def test_only_the_first_sound_streams_and_loaded_pcm_is_the_solo_pcm(on_run: _Run, solo_pcm: SoloPcm) -> None:
    """Three sessions at once with streaming ``on``, where no later segment is waited on (each sentence after a
    first one has a whole sentence's audio ahead of it): each session's first segment is decoded in chunks, every
    other segment in one decoder call; each session's PCM is what it gets alone; every segment after the first
    sound is streaming off's PCM (the session alone with streaming off) bit for bit. (The run was once made with
    ``stream_ahead_ratio=0``, which gives these sessions the same choices: the ratio only enters
    ``streams_segment``, tested for 0 above, and the next test covers a later segment that is waited on.)"""
    run = on_run
    later_checked = 0
    for index, (texts, requests) in enumerate(zip(SESSIONS, run.pieces, strict=True)):
        assert b"".join(b"".join(pieces) for pieces in requests) == b"".join(_alone(solo_pcm, texts, ON)), (
            "loaded PCM equals the session alone"
        )
        chunks = _by_segment(run.calls, f"s{index}")
        segments = list(chunks)
        assert len(segments) >= 2
        assert len(chunks[segments[0]]) >= 2 and chunks[segments[0]][0] == 1, "the first sound is streamed"
        assert all(chunks[text] == [0] for text in segments[1:]), "every later segment is decoded whole"
        # a segment decoded whole comes out as one piece: the first request's last pieces are its later segments
        off = _alone(solo_pcm, texts, OFF)
        later = run.first_segments[index] - 1
        first_sound = b"".join(requests[0][: len(requests[0]) - later])
        after = b"".join(requests[0][len(requests[0]) - later :])
        if later:
            assert off[0].endswith(after), "later segments are streaming off's PCM"
            later_checked += 1
        assert off[0][: len(off[0]) - len(after)] != first_sound, "the first segment is the streamed decode"
        assert [b"".join(pieces) for pieces in requests[1:]] == off[1:], "a later request is streaming off's PCM"
    assert later_checked, "some session's first request has segments after its first sound"


def test_a_long_segment_right_after_a_short_first_sound_streams_too(onnx_engine: Engine, solo_pcm: SoloPcm) -> None:
    """With the default ratio, a long sentence after a short first one ("Sure.") streams as well (a whole decode
    could outlast the 0.5 s ahead of it); the third, with that sentence's audio ahead, is decoded whole. Loaded PCM
    is the session's PCM alone."""
    texts = (f"Sure. {FIRST} {SECOND}",)
    run = _run(onnx_engine, ON, (texts, SESSIONS[1]))
    assert b"".join(run.pieces[0][0]) == solo_pcm(texts[0], options=SpeechOptions(VOICE), policy=ON)
    chunks = _by_segment(run.calls, "s0")
    assert list(chunks) == ["Sure.", FIRST, SECOND]
    assert chunks[FIRST][:2] == [1, 2], "the long sentence after 0.5 s of audio streams"
    assert chunks[SECOND] == [0], "with a whole sentence ahead of it, the next is decoded whole"


def test_the_scheduler_interleaves_chunks_first_sounds_first(on_run: _Run) -> None:
    """On one worker, the first chunk of every waiting session runs before any session's second chunk, then the
    sessions take turns: no session's later chunk runs twice before the others' chunks of the same segment index."""
    calls = on_run.calls
    labels = {f"s{i}" for i in range(len(SESSIONS))}
    assert {who for who, _, _ in calls[:3]} == labels and all(chunk == 1 for _, _, chunk in calls[:3])
    assert {who for who, _, _ in calls[3:6]} == labels, "the second jobs go round the sessions"


def test_every_streams_each_segment_and_on_is_cheaper(onnx_engine: Engine, solo_pcm: SoloPcm, on_run: _Run) -> None:
    """``every`` decodes every segment in chunks (the earlier behaviour); ``on`` makes fewer decoder calls for the
    same session (its calls in the three-session run: the choice reads only the session's own requests), and both
    give the session the PCM it gets alone."""
    run = _run(onnx_engine, EVERY, SESSIONS[:1])
    assert b"".join(b"".join(p) for p in run.pieces[0]) == b"".join(_alone(solo_pcm, SESSIONS[0], EVERY))
    per_segment = _by_segment(run.calls, "s0")
    assert all(chunks[0] == 1 and len(chunks) >= 1 for chunks in per_segment.values())
    assert 0 not in {chunk for chunks in per_segment.values() for chunk in chunks}
    assert b"".join(b"".join(p) for p in on_run.pieces[0]) == b"".join(_alone(solo_pcm, SESSIONS[0], ON))
    assert len([call for call in on_run.calls if call[0] == "s0"]) < len(run.calls)
