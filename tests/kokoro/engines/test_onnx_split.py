"""The int8 graph split at its decoder (kokoro_server.engines.onnx_split) and decoded in chunks (chunk_plan)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from kokoro_server.engines import Engine, OnnxSynthesizer, assemble_int8_model
from kokoro_server.engines.chunk_plan import ChunkSchedule, DecodeWindow, decode_windows, plan_chunks

TEXT = "The flight to Lisbon is delayed by about forty minutes because of fog at the departure airport."


def test_front_end_then_decoder_is_the_whole_graph_bit_for_bit(onnx_engine: Engine) -> None:
    """The split engine's audio and durations equal the unsplit graph's exactly."""
    assert onnx_engine.streams
    whole = OnnxSynthesizer(assemble_int8_model(), threads=2, split=False)
    assert not whole.streams
    segment = onnx_engine.plan(TEXT, voice="jf_alpha", speed=1.0)[0]
    split = onnx_engine.render_timed(segment, voice="jf_alpha", speed=1.0)
    style = onnx_engine._voices.style_for(onnx_engine._voices.resolve("jf_alpha"), len(segment.tokens))
    reference = whole.infer_timed(segment.tokens, style, 1.0)
    assert split.durations == reference.durations
    np.testing.assert_array_equal(split.audio, reference.audio)


def test_streamed_chunks_tile_the_segment(onnx_engine: Engine) -> None:
    """A small first chunk (leading padding + first_frames), later ones growing from later_frames; same length."""
    segment = onnx_engine.plan(TEXT, voice="jf_alpha", speed=1.0)[0]
    streamed = onnx_engine.render_stream(segment, voice="jf_alpha", speed=1.0)
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
    assert chunks[1:-1] == [schedule.later_frames * schedule.growth**k for k in range(len(chunks) - 2)]
    assert sum(chunks) == sum(streamed.durations)


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
    """growth=2: after the first chunk, 24, 48, 96 ... frames, the last one cut at the segment's end."""
    schedule = ChunkSchedule(first_frames=12, later_frames=24, margin_frames=32, growth=2)
    chunks = plan_chunks(300, lead_frames=8, schedule=schedule)
    assert [c.end - c.start for c in chunks] == [20, 24, 48, 96, 112]
    assert chunks[1].window_start == 0 and chunks[2].window_start == 44 - 32 and chunks[-1].window_end == 300
