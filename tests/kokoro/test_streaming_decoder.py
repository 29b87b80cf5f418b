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

import numpy as np
import pytest

from kokoro_server.engines import Engine
from kokoro_server.policy import SpeechPolicy
from kokoro_server.scheduled_speech import ScheduledSpeech, speak_offline
from kokoro_server.scheduler import Scheduler, SchedulerSession
from kokoro_server.silence import Boundary, SilencePolicy, shape_segment
from kokoro_server.stream_quality import log_mel_distance, seam_jumps
from kokoro_server.stream_shaper import StreamShaper

SEAM_STEP_RATIO = 1.25
"""A seam's step must stay within the corpus maximum (1.22) of the largest step inside the chunks."""
LOG_MEL_LIMIT = 1.6
"""Nepers; the corpus maximum was 1.41 with the default schedule."""
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
def test_streamed_decode_has_no_audible_seam(onnx_engine: Engine, text: str) -> None:
    segment = onnx_engine.plan(text, voice="jf_alpha", speed=1.0)[0]
    whole = onnx_engine.render(segment, voice="jf_alpha", speed=1.0)
    chunks = list(onnx_engine.render_stream(segment, voice="jf_alpha", speed=1.0).chunks)
    streamed = np.concatenate(chunks)
    assert len(chunks) >= 3
    assert len(streamed) == len(whole)
    seam, inside = seam_jumps(streamed, list(np.cumsum([len(c) for c in chunks])[:-1]))
    assert seam < SEAM_STEP_RATIO * inside
    assert log_mel_distance(whole, streamed) < LOG_MEL_LIMIT


def test_a_segment_goes_out_chunk_by_chunk_as_speak_offline_says(onnx_engine: Engine) -> None:
    """One segment's audio comes out of ScheduledSpeech in several pieces, together the offline reference."""
    text = TEXTS[0]

    async def pieces() -> list[bytes]:
        scheduler = Scheduler(
            workers=1, name="stream", speech=SpeechPolicy(first_fragment_words=None, stream_decoder=True)
        )
        try:
            speech = ScheduledSpeech(
                onnx_engine, scheduler, SchedulerSession("s"), text=text, voice="jf_alpha", speed=1.0
            )
            assert await speech.plan() == 1
            return [pcm async for pcm in speech.pcm_segments()]
        finally:
            scheduler.shutdown()

    got = asyncio.run(pieces())
    assert len(got) >= 3
    reference = speak_offline(
        onnx_engine, text, voice="jf_alpha", policy=SpeechPolicy(first_fragment_words=None, stream_decoder=True)
    )
    assert b"".join(got) == reference
