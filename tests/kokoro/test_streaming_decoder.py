"""Streaming within a segment: the incremental silence policy, the scheduled chunks, and how they sound.

The seam thresholds come from bench/bench_streaming_quality.py over the corpus's 34 segments (docs/benchmarks.md):
with the first schedule (margin 16, equal 48-frame chunks) the largest step at a seam was 0.33 (median) to 1.22
(max) of the largest step inside the chunks, and the log-mel distance to the whole-segment decode 1.05 nepers
median, 1.41 max; the default schedule now (margin 32, chunks doubling) is closer (log-mel median 0.64), so these
limits are loose upper bounds.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from kokoro_server.engines import Engine, Rendered
from kokoro_server.policy import SpeechPolicy
from kokoro_server.scheduled_speech import ScheduledSpeech, ShapedInfo, SpeechAudio, SpeechTimings
from kokoro_server.scheduler import Scheduler, SchedulerSession
from kokoro_server.silence import Boundary, SilencePolicy, shape_segment
from kokoro_server.stream_shaper import StreamShaper
from kokoro_server.word_timer import WordTimer
from kokoro_server.word_timings import SegmentPlacement, segment_word_timings
from relay_core import limits
from relay_core.speech_options import SpeechOptions
from relay_core.word_timings import WordTiming, WordTimings

if TYPE_CHECKING:
    from tests.conftest import SoloPcm

TEXTS = (
    "The flight to Lisbon is delayed by about forty minutes because of fog at the departure airport.",
    "Your blood pressure readings from this week look stable and are all within the normal range.",
)
STREAMING = SpeechPolicy(stream_decoder=True)


@pytest.mark.parametrize("seed", range(40))
def test_stream_shaper_equals_the_whole_segment_policy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    size = int(rng.integers(20, 6000))
    audio = (rng.standard_normal(size) * 1e-4).astype(np.float32)
    for _ in range(int(rng.integers(0, 3))):
        start = int(rng.integers(0, size))
        end = min(size, start + int(rng.integers(1, 900)))
        audio[start:end] = 0.3 * rng.standard_normal(end - start)
    boundary = [Boundary.START, Boundary.SENTENCE, Boundary.CLAUSE][seed % 3]
    policy = SilencePolicy()
    reference = shape_segment(audio, boundary=boundary, policy=policy)
    shaper = StreamShaper(boundary=boundary, policy=policy)
    cuts = [0, *sorted(int(c) for c in rng.integers(0, size, size=int(rng.integers(0, 6)))), size]
    pieces = [shaper.push(audio[a:b]) for a, b in itertools.pairwise(cuts)]
    pieces.append(shaper.finish())
    np.testing.assert_array_equal(np.concatenate(pieces), reference.audio)
    assert shaper.result is not None
    assert (shaper.result.cut_start_samples, shaper.result.cut_end_samples, shaper.result.pause_samples) == (
        reference.cut_start_samples,
        reference.cut_end_samples,
        reference.pause_samples,
    )


@pytest.mark.parametrize("text", TEXTS)
def test_streamed_decode_has_no_audible_seam(
    onnx_engine: Engine, solo_pcm: SoloPcm, text: str, assert_streams_like_whole: Callable[[Any, list[Any]], None]
) -> None:
    """The engine's streamed decode of a segment against its whole decode, both the engine's own, through the
    session's decode cache (the streamed ones are the ones the references below are made of)."""
    segment = onnx_engine.plan(text, voice="jf_alpha", speed=1.0)[0]
    whole = solo_pcm.decodes.render_timed(segment, voice="jf_alpha", speed=1.0).audio
    chunks = list(solo_pcm.decodes.render_stream(segment, voice="jf_alpha", speed=1.0).chunks)
    assert_streams_like_whole(whole, chunks)


def test_a_segment_goes_out_chunk_by_chunk_as_speak_offline_says(onnx_engine: Engine, solo_pcm: SoloPcm) -> None:
    """One segment's audio comes out of ScheduledSpeech in several pieces, together the offline reference."""
    text = TEXTS[0]

    async def pieces() -> list[bytes]:
        scheduler = Scheduler(
            workers=1, name="stream", speech=SpeechPolicy(first_fragment_words=None, stream_decoder=True)
        )
        try:
            speech = ScheduledSpeech(
                onnx_engine, scheduler, SchedulerSession("s"), text=text, options=SpeechOptions("jf_alpha")
            )
            assert await speech.plan() == 1
            return [pcm async for pcm in speech.pcm_segments()]
        finally:
            scheduler.shutdown()

    got = asyncio.run(pieces())
    assert len(got) >= 3
    reference = solo_pcm(
        text, options=SpeechOptions("jf_alpha"), policy=SpeechPolicy(first_fragment_words=None, stream_decoder=True)
    )
    assert b"".join(got) == reference


def test_a_timed_request_streams_and_its_timings_are_the_whole_segment_ones(
    onnx_engine: Engine, solo_pcm: SoloPcm, assert_timed_before_audio: Callable[[Any], list[Any]]
) -> None:
    """With timings, a streamed segment's audio goes out exactly as without them (the same pieces: timings never
    hold audio back); every word's timing is sent before any of its audio, as an estimate where its span is not
    final yet; and once every message is applied, the words and times are what the whole-segment computation gives
    on the same (streamed) audio, all final. Every segment streams here (``KOKORO_STREAM_DECODER=every``), so a
    segment that follows audio is covered too. The offline reference and each segment's raw decode come from the
    session's cache (``solo_pcm``): the reference is made of those decodes."""
    text = f"{TEXTS[0]} {TEXTS[1]}"
    policy = SpeechPolicy(first_fragment_words=None, stream_decoder=True, stream_every_segment=True)

    async def run(timed: bool) -> tuple[list[WordTimings | bytes], list[ShapedInfo]]:
        scheduler = Scheduler(workers=1, name="timed-stream", speech=policy)
        try:
            timer = WordTimer(onnx_engine, request_id="r") if timed else None
            speech = ScheduledSpeech(
                onnx_engine, scheduler, SchedulerSession("s"), text=text, options=SpeechOptions("jf_alpha"), timer=timer
            )
            events: list[WordTimings | bytes] = []
            async for event in speech.events():
                if isinstance(event, SpeechTimings):
                    events.append(event.timings)
                elif isinstance(event, SpeechAudio):
                    events.append(event.pcm)
            return events, speech.shaped
        finally:
            scheduler.shutdown()

    events, shaped = asyncio.run(run(timed=True))
    untimed, _ = asyncio.run(run(timed=False))
    pieces = [e for e in events if isinstance(e, bytes)]
    messages = [e for e in events if isinstance(e, WordTimings)]
    assert len(shaped) == 2
    assert len(pieces) >= 5, "each segment's audio goes out in several pieces"
    assert pieces == untimed, "the timed request's audio goes out piece for piece as the untimed one's"
    assert b"".join(pieces) == solo_pcm(text, options=SpeechOptions("jf_alpha"), policy=policy)
    assert any(not m.final for m in messages), "words not final yet go out as estimates instead of waiting"
    assert any(m.index is not None for m in messages), "estimates are replaced by a later message"

    held = assert_timed_before_audio(events)

    reference: list[WordTiming] = []
    offset = 0
    for info in shaped:
        streamed = solo_pcm.decodes.render_stream(info.segment, voice="jf_alpha", speed=1.0)
        raw = np.concatenate(list(streamed.chunks))
        durations = streamed.durations
        kept = len(raw) - info.cut_start_samples - info.cut_end_samples
        placement = SegmentPlacement(
            offset_samples=offset,
            cut_start_samples=info.cut_start_samples,
            pause_samples=info.pause_samples,
            kept_samples=kept,
        )
        whole = segment_word_timings(
            onnx_engine,
            info.segment,
            Rendered(audio=raw, durations=durations),
            placement,
            request_id="r",
            sample_rate=limits.SAMPLE_RATE,
        )
        assert whole is not None
        reference.extend(whole.words)
        offset += info.pause_samples + kept
    assert held == reference
