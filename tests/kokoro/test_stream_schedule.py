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
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pytest

from kokoro_server.config import ConfigError, ServerConfig
from kokoro_server.engines import Engine, Segment
from kokoro_server.engines.base import Rendered, StreamedRender
from kokoro_server.engines.speech_engine import DelegatingEngine
from kokoro_server.policy import SpeechPolicy
from kokoro_server.scheduled_speech import ScheduledSpeech, speak_offline
from kokoro_server.scheduler import Scheduler, SchedulerSession
from relay_core.speech_options import SpeechOptions

VOICE = "jf_alpha"
FIRST = "The flight to Lisbon is delayed by about forty minutes because of fog at the departure airport."
SECOND = "Your blood pressure readings from this week look stable and are all within the normal range."
SESSIONS = (
    (f"{FIRST} {SECOND}", "Thanks for waiting."),
    (SECOND, FIRST),
    ("Tomorrow looks dry and mild, with a light breeze from the west in the afternoon.", "Enjoy the walk."),
)
"""Three sessions of two requests each (the first with two sentences), as a session plan in the load bench."""
ON = SpeechPolicy(stream_decoder=True)
FIRST_ONLY = SpeechPolicy(stream_decoder=True, stream_ahead_ratio=0)
"""Only the first sound streams (no later segment counts as waited on)."""
EVERY = SpeechPolicy(stream_decoder=True, stream_every_segment=True)
OFF = SpeechPolicy(stream_decoder=False, first_fragment_words=None)
"""Streaming off, planned as streaming on plans (no first-fragment cut), so the segments line up."""


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


async def _session(
    engine: Engine, scheduler: Scheduler, label: str, texts: tuple[str, ...], log: _DecodeLog, start: asyncio.Event
) -> list[list[bytes]]:
    """One session's requests in order, each request's PCM pieces as they came out."""
    session = SchedulerSession(label)
    logged = _LoggedEngine(engine, label, log)
    out: list[list[bytes]] = []
    for index, text in enumerate(texts):
        speech = ScheduledSpeech(logged, scheduler, session, text=text, options=SpeechOptions(VOICE))
        await speech.plan()
        if index == 0:
            await start.wait()
        out.append([pcm async for pcm in speech.pcm_segments()])
    return out


def _run(
    engine: Engine, policy: SpeechPolicy, sessions: tuple[tuple[str, ...], ...]
) -> tuple[list[list[list[bytes]]], list[tuple[str, str, int]]]:
    """Every session at once on one worker (the onnx default); their pieces and the decoder calls in order."""
    log = _DecodeLog()

    async def all_at_once() -> list[list[list[bytes]]]:
        scheduler = Scheduler(workers=1, name="load", speech=policy)
        start = asyncio.Event()
        try:
            tasks = [
                asyncio.create_task(_session(engine, scheduler, f"s{i}", texts, log, start))
                for i, texts in enumerate(sessions)
            ]
            await asyncio.sleep(0.5)  # every session has planned its first request
            start.set()
            return list(await asyncio.gather(*tasks))
        finally:
            scheduler.shutdown()

    return asyncio.run(all_at_once()), log.calls


def _offline(engine: Engine, texts: tuple[str, ...], policy: SpeechPolicy) -> bytes:
    """A session's PCM alone, request after request (each request after the one before has been heard)."""
    out = b""
    previous: str | None = None
    for text in texts:
        out += speak_offline(engine, text, options=SpeechOptions(VOICE), policy=policy, previous=previous)
        previous = text
    return out


def test_only_the_first_sound_streams_and_loaded_pcm_is_the_solo_pcm(onnx_engine: Engine) -> None:
    """Three sessions at once, only the first sound streaming: each session's first segment is decoded in chunks,
    every other segment in one decoder call; each session's PCM is what it gets alone; every segment after the
    first sound is streaming off's PCM bit for bit."""
    results, calls = _run(onnx_engine, FIRST_ONLY, SESSIONS)
    off_results, _ = _run(onnx_engine, OFF, SESSIONS)
    later_checked = 0
    for index, (texts, requests, off) in enumerate(zip(SESSIONS, results, off_results, strict=True)):
        label = f"s{index}"
        assert b"".join(b"".join(pieces) for pieces in requests) == _offline(onnx_engine, texts, FIRST_ONLY), (
            "loaded PCM equals the session alone"
        )
        mine = [(text, chunk) for who, text, chunk in calls if who == label]
        segments = list(dict.fromkeys(text for text, _ in mine))
        chunks = {text: [chunk for t, chunk in mine if t == text] for text in segments}
        assert len(segments) >= 2
        assert len(chunks[segments[0]]) >= 2 and chunks[segments[0]][0] == 1, "the first sound is streamed"
        assert all(chunks[text] == [0] for text in segments[1:]), "every later segment is decoded whole"
        # streaming off gives one piece per segment; after the first segment, streaming on gives the same pieces
        later = len(off[0]) - 1
        if later:
            assert requests[0][len(requests[0]) - later :] == off[0][1:], "later segments are streaming off's PCM"
            later_checked += 1
        assert requests[0][: len(requests[0]) - later] != off[0][:1], "the first segment is the streamed decode"
        assert requests[1:] == off[1:], "a later request is streaming off's PCM"
    assert later_checked, "some session's first request has segments after its first sound"


def test_a_long_segment_right_after_a_short_first_sound_streams_too(onnx_engine: Engine) -> None:
    """With the default ratio, a long sentence after a short first one ("Sure.") streams as well (a whole decode
    could outlast the 0.5 s ahead of it); the third, with that sentence's audio ahead, is decoded whole. Loaded PCM
    is the session's PCM alone."""
    texts = (f"Sure. {FIRST} {SECOND}",)
    results, calls = _run(onnx_engine, ON, (texts, SESSIONS[1]))
    assert b"".join(results[0][0]) == speak_offline(onnx_engine, texts[0], options=SpeechOptions(VOICE), policy=ON)
    mine = [(text, chunk) for who, text, chunk in calls if who == "s0"]
    segments = list(dict.fromkeys(text for text, _ in mine))
    chunks = {text: [chunk for t, chunk in mine if t == text] for text in segments}
    assert segments == ["Sure.", FIRST, SECOND]
    assert chunks[FIRST][:2] == [1, 2], "the long sentence after 0.5 s of audio streams"
    assert chunks[SECOND] == [0], "with a whole sentence ahead of it, the next is decoded whole"


def test_the_scheduler_interleaves_chunks_first_sounds_first(onnx_engine: Engine) -> None:
    """On one worker, the first chunk of every waiting session runs before any session's second chunk, then the
    sessions take turns: no session's later chunk runs twice before the others' chunks of the same segment index."""
    _, calls = _run(onnx_engine, ON, SESSIONS)
    labels = {f"s{i}" for i in range(len(SESSIONS))}
    assert {who for who, _, _ in calls[:3]} == labels and all(chunk == 1 for _, _, chunk in calls[:3])
    assert {who for who, _, _ in calls[3:6]} == labels, "the second jobs go round the sessions"


def test_every_streams_each_segment_and_on_is_cheaper(onnx_engine: Engine) -> None:
    """``every`` decodes every segment in chunks (the earlier behaviour); ``on`` makes fewer decoder calls for the
    same session plan, and both give each session the PCM it gets alone."""
    results, calls = _run(onnx_engine, EVERY, SESSIONS[:1])
    assert b"".join(b"".join(p) for p in results[0]) == _offline(onnx_engine, SESSIONS[0], EVERY)
    per_segment: dict[str, list[int]] = {}
    for _, text, chunk in calls:
        per_segment.setdefault(text, []).append(chunk)
    assert all(chunks[0] == 1 and len(chunks) >= 1 for chunks in per_segment.values())
    assert 0 not in {chunk for chunks in per_segment.values() for chunk in chunks}
    _, on_calls = _run(onnx_engine, ON, SESSIONS[:1])
    assert len(on_calls) < len(calls)
