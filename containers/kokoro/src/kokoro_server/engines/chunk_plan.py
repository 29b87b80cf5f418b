"""Where a segment's decoder chunks start and end, and the context window each is decoded with.

Streaming decodes a segment's frames in chunks: the first one small (first sound comes after the front end and
that chunk), the later ones larger (fewer calls, less margin overhead). Each chunk is decoded on a window that
adds ``margin_frames`` of context on both sides (clipped at the segment's ends) and the margins' audio is cropped,
so the convolutions see the same neighbours they would on the whole segment; the instance norms see the window's
statistics instead of the segment's, which is what the margins keep small (docs/server.md, measured by
bench/bench_streaming_quality.py).

Guarantees: the chunks tile ``[0, frames)`` in order with no gap or overlap; every window contains its chunk.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ChunkSchedule:
    """Chunk sizes and context in duration frames (25 ms each)."""

    first_frames: int = 12
    """Audible frames in the first chunk (after the segment's leading padding, which it also covers)."""
    later_frames: int = 48
    """Frames of the second chunk; each later one is ``growth`` times the one before."""
    margin_frames: int = 32
    growth: int = 2
    """1: equal later chunks; 2: 48, 96, 192, ... (each chunk decodes while the audio before it plays, and
    fewer, longer windows see statistics closer to the whole segment's). The default 12, 48×2, margin 32 was the
    best measured (Whisper WER +0.004 over the whole decode, 1.78× the decoder work; docs/benchmarks.md §11)."""

    def __post_init__(self) -> None:
        if self.first_frames < 1 or self.later_frames < 1 or self.margin_frames < 0 or self.growth < 1:
            raise ValueError(
                f"chunk schedule {self}: use first_frames, later_frames, growth >= 1 and margin_frames >= 0"
            )


@dataclass(frozen=True, slots=True)
class Chunk:
    """Frames ``[start, end)`` are kept; they are decoded on the window ``[window_start, window_end)``."""

    start: int
    end: int
    window_start: int
    window_end: int


def plan_chunks(frames: int, *, lead_frames: int, schedule: ChunkSchedule) -> list[Chunk]:
    """The chunks of a segment of ``frames`` frames whose first ``lead_frames`` are the model's leading padding."""
    chunks: list[Chunk] = []
    start = 0
    end = min(frames, max(0, lead_frames) + schedule.first_frames)
    size = schedule.later_frames
    while start < frames:
        chunks.append(
            Chunk(
                start=start,
                end=end,
                window_start=max(0, start - schedule.margin_frames),
                window_end=min(frames, end + schedule.margin_frames),
            )
        )
        start, end = end, min(frames, end + size)
        size *= schedule.growth
    return chunks
