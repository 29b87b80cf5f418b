"""The int8 graph split at its decoder (kokoro_server.engines.onnx_split) and decoded in chunks (chunk_plan)."""

from __future__ import annotations

import dataclasses
import itertools
from typing import TYPE_CHECKING

import numpy as np
import pytest

from kokoro_server.engines import Engine, OnnxSynthesizer, assemble_int8_model
from kokoro_server.engines.chunk_plan import ChunkSchedule, DecodeWindow, decode_windows, plan_chunks

if TYPE_CHECKING:
    from tests.conftest import SoloPcm

TEXT = "The flight to Lisbon is delayed by about forty minutes because of fog at the departure airport."
"""The segment tests/kokoro/test_streaming_decoder.py decodes too: the engine's decodes of it come from the
session's cache (tests/conftest.py ``solo_pcm.decodes``), made once per session."""


def test_front_end_then_decoder_is_the_whole_graph_bit_for_bit(onnx_engine: Engine, solo_pcm: SoloPcm) -> None:
    """The split engine's audio and durations (its ``render_timed``, from the session's cache) equal the unsplit
    graph's exactly."""
    assert onnx_engine.streams
    whole = OnnxSynthesizer(assemble_int8_model(), threads=2, split=False)
    assert not whole.streams
    segment = onnx_engine.plan(TEXT, voice="jf_alpha", speed=1.0)[0]
    split = solo_pcm.decodes.render_timed(segment, voice="jf_alpha", speed=1.0)
    style = onnx_engine._voices.style_for(onnx_engine._voices.resolve("jf_alpha"), len(segment.tokens))
    reference = whole.infer_timed(segment.tokens, style, 1.0)
    assert split.durations == reference.durations
    np.testing.assert_array_equal(split.audio, reference.audio)


def test_streamed_chunks_tile_the_segment(onnx_engine: Engine, solo_pcm: SoloPcm) -> None:
    """A small first chunk (leading padding + first_frames), a second of later_frames, then the rest in one chunk
    (ChunkSchedule.max_chunks, issue 29); as long as the whole segment. (The engine's streamed decode, from the
    session's cache.)"""
    segment = onnx_engine.plan(TEXT, voice="jf_alpha", speed=1.0)[0]
    streamed = solo_pcm.decodes.render_stream(segment, voice="jf_alpha", speed=1.0)
    audio = list(streamed.chunks)
    chunks = [len(chunk) // 600 for chunk in audio]
    schedule = ChunkSchedule()
    assert chunks[0] == streamed.durations[0] + schedule.first_frames
    # the leading padding before the first chunk's lead context is silence, not decoded; the context is decoded
    assert schedule.lead_context_frames is not None
    silent = 600 * (streamed.durations[0] - schedule.lead_context_frames)
    assert silent > 0
    assert not audio[0][:silent].any()
    assert audio[0][silent : silent + 600 * schedule.lead_context_frames].any()
    assert schedule.max_chunks == 3 and len(chunks) == 3
    assert chunks[1] == schedule.later_frames
    assert sum(chunks) == sum(streamed.durations)


def test_the_rest_after_the_first_chunk_is_the_whole_decode_exactly(onnx_engine: Engine, solo_pcm: SoloPcm) -> None:
    """With two chunks the rest is decoded on one window that starts a margin before the first chunk's end, which on
    a typical segment (padding + 12 frames < the 32-frame margin) is the whole segment: the audio after the first
    chunk is the whole decode's bit for bit, only the first chunk is approximate."""
    segment = onnx_engine.plan(TEXT, voice="jf_alpha", speed=1.0)[0]
    whole = solo_pcm.decodes.render_timed(segment, voice="jf_alpha", speed=1.0).audio  # the reference, cached
    synth = onnx_engine._synthesizer
    assert isinstance(synth, OnnxSynthesizer)
    default = synth.schedule
    synth.schedule = dataclasses.replace(default, max_chunks=2)
    try:
        first, rest = onnx_engine.render_stream(segment, voice="jf_alpha", speed=1.0).chunks
    finally:
        synth.schedule = default
    np.testing.assert_array_equal(rest, whole[len(first) :])
    assert not np.array_equal(first, whole[: len(first)])


@pytest.mark.parametrize(("frames", "lead"), [(1, 0), (5, 10), (100, 9), (61, 1)])
def test_chunk_plan_tiles_and_windows_contain_chunks(frames: int, lead: int) -> None:
    schedule = ChunkSchedule(first_frames=4, later_frames=20, margin_frames=6)
    chunks = plan_chunks(frames, lead_frames=lead, schedule=schedule)
    assert chunks[0].start == 0 and chunks[-1].end == frames
    assert all(a.end == b.start for a, b in itertools.pairwise(chunks))
    for chunk in chunks:
        decoded = chunk.start + chunk.silent_frames
        assert 0 <= chunk.window_start <= decoded < chunk.end <= chunk.window_end <= frames
        assert decoded - chunk.window_start == min(chunk.start, 6)
    assert all(chunk.silent_frames == 0 for chunk in chunks[1:])
    # the first chunk decodes the last 8 frames of the leading padding (ChunkSchedule.lead_context_frames), never less
    # than one frame of its own
    assert chunks[0].silent_frames == max(0, min(lead - 8, chunks[0].end - 1))


def test_a_segment_the_first_window_covers_is_one_chunk() -> None:
    """When the first window reaches the segment's end, the first chunk takes the whole segment (a second window
    would decode it all again); one frame more and it splits."""
    schedule = ChunkSchedule(first_frames=12, later_frames=48, margin_frames=32)
    (only,) = plan_chunks(13 + 12 + 32, lead_frames=13, schedule=schedule)
    assert (only.start, only.end, only.window_start, only.window_end, only.silent_frames) == (0, 57, 5, 57, 5)
    assert [(c.start, c.end) for c in plan_chunks(58, lead_frames=13, schedule=schedule)] == [(0, 25), (25, 58)]


def test_the_first_chunk_skips_the_padding_before_its_lead_context() -> None:
    """Leading padding beyond lead_context_frames is not decoded (silent frames); None decodes all of it."""
    skipping = plan_chunks(100, lead_frames=13, schedule=ChunkSchedule(lead_context_frames=8))
    assert (skipping[0].silent_frames, skipping[0].window_start, skipping[0].end) == (5, 5, 25)
    assert skipping[1].window_start == 0  # later windows keep their full left margin, padding included
    everything = plan_chunks(100, lead_frames=13, schedule=ChunkSchedule(lead_context_frames=None))
    assert (everything[0].silent_frames, everything[0].window_start) == (0, 0)
    assert [(c.start, c.end) for c in skipping] == [(c.start, c.end) for c in everything]
    windows = decode_windows(100, lead_frames=13, schedule=ChunkSchedule())
    assert (windows[0].lo, windows[0].keep_start, windows[0].keep_end, windows[0].silent_frames) == (5, 0, 20, 5)
    assert decode_windows(100, lead_frames=13, schedule=ChunkSchedule(), chunked=False) == [
        DecodeWindow(lo=0, hi=100, keep_start=0, keep_end=100)
    ]
    with pytest.raises(ValueError, match="lead_context_frames"):
        ChunkSchedule(lead_context_frames=-1)


def test_chunk_plan_grows_geometrically() -> None:
    """growth=2 with no limit on the chunks (the schedule before issue 29): after the first chunk, 24, 48, 96 ...
    frames, the last one cut at the segment's end."""
    schedule = ChunkSchedule(first_frames=12, later_frames=24, margin_frames=32, growth=2, max_chunks=None)
    chunks = plan_chunks(300, lead_frames=8, schedule=schedule)
    assert [c.end - c.start for c in chunks] == [20, 24, 48, 96, 112]
    assert chunks[1].window_start == 0 and chunks[2].window_start == 44 - 32 and chunks[-1].window_end == 300


def _decoded(frames: int, lead: int, schedule: ChunkSchedule) -> int:
    return sum(w.hi - w.lo for w in decode_windows(frames, lead_frames=lead, schedule=schedule))


@pytest.mark.parametrize("frames", [58, 60, 89, 115, 150, 226, 400, 509, 1000])
@pytest.mark.parametrize("lead", [0, 8, 13, 20, 30])
def test_at_most_two_windows_and_one_first_window_more_than_the_whole_decode(frames: int, lead: int) -> None:
    """Two chunks (issue 29, the least work): the first chunk, then the remainder on one window from a margin before
    it to the segment's end. The decoder's work is the whole decode plus the first window at most (a 115-frame
    segment: windows of 52 and 115 frames, 1.45x, against 52, 105 and 74 before), and the first chunk is the one
    before."""
    schedule = ChunkSchedule(max_chunks=2)
    chunks = plan_chunks(frames, lead_frames=lead, schedule=schedule)
    assert len(chunks) <= 2
    assert chunks[0].start == 0 and chunks[-1].end == frames
    assert all(a.end == b.start for a, b in itertools.pairwise(chunks))
    before = plan_chunks(frames, lead_frames=lead, schedule=ChunkSchedule(max_chunks=None))
    assert chunks[0] == before[0]
    first = chunks[0].window_end - chunks[0].window_start
    assert _decoded(frames, lead, schedule) <= frames + first
    assert _decoded(frames, lead, schedule) <= _decoded(frames, lead, ChunkSchedule(max_chunks=None))
    if len(chunks) == 2:
        rest = chunks[1]
        assert (rest.window_start, rest.window_end) == (max(0, rest.start - schedule.margin_frames), frames)
    if lead + schedule.first_frames < schedule.margin_frames:
        assert chunks[-1].window_start == 0, "the rest is decoded on the whole segment: the whole decode's audio"
    if frames == 115 and lead == 13:
        assert [w.hi - w.lo for w in decode_windows(frames, lead_frames=lead, schedule=schedule)] == [52, 115]


@pytest.mark.parametrize("frames", [58, 60, 89, 115, 150, 226, 400, 509, 1000])
@pytest.mark.parametrize("lead", [0, 8, 13, 20, 30])
def test_the_default_is_issue_21s_first_two_chunks_then_the_rest_on_one_window(frames: int, lead: int) -> None:
    """The default schedule (issue 29): the first two chunks and windows are the old schedule's (so the second still
    decodes while the first chunk plays: no new stall), then the remainder on one window to the segment's end. At
    most three decoder calls, never more work than before, and at most the whole decode plus the first two windows
    (a 226-frame segment: windows of 52, 105 and 185 frames)."""
    schedule = ChunkSchedule()
    assert schedule.max_chunks == 3
    chunks = plan_chunks(frames, lead_frames=lead, schedule=schedule)
    before = plan_chunks(frames, lead_frames=lead, schedule=ChunkSchedule(max_chunks=None))
    assert 1 <= len(chunks) <= 3
    assert chunks[0].start == 0 and chunks[-1].end == frames
    assert all(a.end == b.start for a, b in itertools.pairwise(chunks))
    assert chunks[:-1] == before[: len(chunks) - 1], "the chunks before the last are the old schedule's"
    windows = [w.hi - w.lo for w in decode_windows(frames, lead_frames=lead, schedule=schedule)]
    assert sum(windows) <= _decoded(frames, lead, ChunkSchedule(max_chunks=None))
    assert sum(windows) <= frames + sum(windows[:2])
    assert chunks[-1].window_end == frames
    if frames == 226 and lead == 13:
        assert windows == [52, 105, 185]


def test_a_chunk_whose_window_reaches_the_end_takes_the_remainder() -> None:
    """max_chunks=3: the third chunk absorbs the remainder; a second chunk whose window already reaches the end takes
    it too (a separate window would decode those frames again); max_chunks=1 is the whole segment; 0 is refused."""
    three = ChunkSchedule(first_frames=12, later_frames=48, margin_frames=32, growth=2, max_chunks=3)
    assert [(c.start, c.end) for c in plan_chunks(400, lead_frames=13, schedule=three)] == [
        (0, 25),
        (25, 73),
        (73, 400),
    ]
    assert [(c.start, c.end) for c in plan_chunks(100, lead_frames=13, schedule=three)] == [(0, 25), (25, 100)]
    assert [(c.start, c.end) for c in plan_chunks(106, lead_frames=13, schedule=three)] == [
        (0, 25),
        (25, 73),
        (73, 106),
    ]
    (whole,) = plan_chunks(400, lead_frames=13, schedule=ChunkSchedule(max_chunks=1))
    assert (whole.start, whole.end, whole.window_end) == (0, 400, 400)
    with pytest.raises(ValueError, match="max_chunks"):
        ChunkSchedule(max_chunks=0)
