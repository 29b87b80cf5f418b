"""Where a segment's decoder chunks start and end, and the context window each is decoded with.

Streaming decodes a segment's frames in chunks: the first one small (first sound comes after the front end and
that chunk), then by default a second chunk that decodes while the first plays and the whole rest in a third
(:attr:`ChunkSchedule.max_chunks`, issue 29). Each chunk is decoded on a window that
adds ``margin_frames`` of context on both sides (clipped at the segment's ends) and the margins' audio is cropped,
so the convolutions see the same neighbours they would on the whole segment; the instance norms see the window's
statistics instead of the segment's, which is what the margins keep small (docs/server.md, measured by
bench/bench_streaming_quality.py). The first chunk does not decode all of the model's leading padding: only its
last :attr:`ChunkSchedule.lead_context_frames` frames, as left context of the first word; the padding before them
is silence the silence policy trims anyway, given as zeros (the first sound no longer waits for it to decode).

Guarantees: the chunks tile ``[0, frames)`` in order with no gap or overlap; every window contains its chunk's
decoded part ``[start + silent_frames, end)``; only the first chunk has silent frames, and it keeps at least one
decoded frame; there are at most :attr:`ChunkSchedule.max_chunks` chunks, so at most that many decoder calls,
and with two the decoded frames are at most the segment's plus the first window's. A segment whose first window
would reach its end anyway (a short one) is one chunk: streaming it would decode it twice for no earlier sound.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True, slots=True)
class ChunkSchedule:
    """Chunk sizes and context in duration frames (25 ms each)."""

    first_frames: int = 12
    """Audible frames in the first chunk (after the segment's leading padding, which it also covers)."""
    later_frames: int = 48
    """Frames of the second chunk; each later one is ``growth`` times the one before (with :attr:`max_chunks` 3,
    the default, the third chunk is the rest; with 2, the second is and these two do not apply)."""
    margin_frames: int = 32
    growth: int = 2
    """1: equal later chunks; 2: 48, 96, 192, ... (each chunk decodes while the audio before it plays, and
    fewer, longer windows see statistics closer to the whole segment's). 12, 48×2, margin 32 with no limit on the
    chunks was issue 21's schedule, the best of its kind measured (Whisper WER +0.004 over the whole decode, 1.78×
    the decoder work; docs/benchmarks.md §12)."""
    lead_context_frames: int | None = 8
    """Frames of the leading padding the first chunk decodes, just before its first word (200 ms; the silence policy
    keeps 10 ms before the first sound); the padding before them comes out as zeros, not decoded. None decodes all
    of it (the audio then starts with the model's own padding output, as the whole decode does). 8 was measured
    against all (34 first segments, docs/benchmarks.md §12): the first window 9 % faster, log-mel distance to the
    whole decode 0.673 against 0.662, SNR 4.8 against 4.9 dB; 4 frames made the first seam's step larger."""

    max_chunks: int | None = 3
    """At most this many chunks per segment: the last one absorbs the whole remainder, and a chunk whose window reaches
    the segment's end anyway is the last (its window decodes the remainder already). 3 (the default, issue 29): the
    first chunk, a second of ``later_frames`` (its window of at most 112 frames decodes while the first chunk's 300
    ms play, as before), then one window for the whole rest, which has the first two chunks' audio to play while it
    decodes. The decoder's work on the load plan falls from 1.28 to 1.19 of the whole decodes (1.53 over the
    corpus's first segments, against 1.75) with the same stalls as before. 2 is the least work (the rest on one
    window that, on a typical segment, is the whole segment: 1.08 on the load plan, the load's wall time 0.82 of the
    old schedule's) but that window decodes while only the first chunk's 300 ms play: solo on two cores the median
    longest stall went from 0.24 s to 1.15 s, a pause a listener hears in every long first sentence
    (docs/benchmarks.md §13); a GPU decodes fast enough for it. None: as many chunks as ``later_frames`` and
    ``growth`` give, each on its own window, a last one of a few frames included (issue 21's schedule)."""

    def __post_init__(self) -> None:
        if self.max_chunks is not None and self.max_chunks < 1:
            raise ValueError(f"chunk schedule {self}: use max_chunks >= 1, or None for no limit")
        if self.first_frames < 1 or self.later_frames < 1 or self.margin_frames < 0 or self.growth < 1:
            raise ValueError(
                f"chunk schedule {self}: use first_frames, later_frames, growth >= 1 and margin_frames >= 0"
            )
        if self.lead_context_frames is not None and self.lead_context_frames < 0:
            raise ValueError(f"chunk schedule {self}: use lead_context_frames >= 0, or None to decode all padding")


@dataclass(frozen=True, slots=True)
class Chunk:
    """Frames ``[start, end)`` are kept; they are decoded on the window ``[window_start, window_end)``."""

    start: int
    end: int
    window_start: int
    window_end: int
    silent_frames: int = 0
    """Frames at the chunk's start given as silence instead of decoded (the first chunk's leading padding); the
    window starts after them."""


@dataclass(frozen=True, slots=True)
class DecodeWindow:
    """One decoder call: decode frames ``[lo, hi)``, keep its frames ``[keep_start, keep_end)`` (window-relative),
    and put ``silent_frames`` frames of zeros before them."""

    lo: int
    hi: int
    keep_start: int
    keep_end: int
    silent_frames: int = 0

    def crop(self, decoded: npt.NDArray[np.float32], frame_samples: int) -> npt.NDArray[np.float32]:
        """The chunk's audio from the window's decoded audio (``frame_samples`` per frame): the silent frames' zeros,
        then the kept frames."""
        kept = decoded[frame_samples * self.keep_start : frame_samples * self.keep_end]
        return self.with_silence(kept, frame_samples)

    def with_silence(self, kept: npt.NDArray[np.float32], frame_samples: int) -> npt.NDArray[np.float32]:
        """The chunk's audio from its kept frames alone (an engine that crops on its device): the silent frames'
        zeros, then ``kept``."""
        if not self.silent_frames:
            return kept
        return np.concatenate([np.zeros(frame_samples * self.silent_frames, dtype=np.float32), kept])


def plan_chunks(frames: int, *, lead_frames: int, schedule: ChunkSchedule) -> list[Chunk]:
    """The chunks of a segment of ``frames`` frames whose first ``lead_frames`` are the model's leading padding."""
    chunks: list[Chunk] = []
    start = 0
    end = min(frames, max(0, lead_frames) + schedule.first_frames)
    if end + schedule.margin_frames >= frames or schedule.max_chunks == 1:
        end = frames  # the first window reaches the segment's end anyway: one window, no second decode of it
    size = schedule.later_frames
    context = schedule.lead_context_frames
    silent = 0 if context is None else max(0, min(lead_frames - context, end - 1))
    while start < frames:
        chunks.append(
            Chunk(
                start=start,
                end=end,
                window_start=max(silent, start - schedule.margin_frames),
                window_end=min(frames, end + schedule.margin_frames),
                silent_frames=silent,
            )
        )
        start, end = end, min(frames, end + size)
        size *= schedule.growth
        silent = 0
        if schedule.max_chunks is not None and (
            len(chunks) + 1 >= schedule.max_chunks or end + schedule.margin_frames >= frames
        ):
            end = frames  # the last chunk allowed, or its window reaches the end anyway: it takes the remainder
    return chunks


def decode_windows(
    frames: int, *, lead_frames: int, schedule: ChunkSchedule, chunked: bool = True
) -> list[DecodeWindow]:
    """The decoder calls that give a segment of ``frames`` frames: one per chunk of :func:`plan_chunks`, or with
    ``chunked`` false one call on the whole segment (every frame decoded, nothing silent)."""
    if not chunked:
        return [DecodeWindow(lo=0, hi=frames, keep_start=0, keep_end=frames)]
    return [
        DecodeWindow(
            lo=c.window_start,
            hi=c.window_end,
            keep_start=c.start + c.silent_frames - c.window_start,
            keep_end=c.end - c.window_start,
            silent_frames=c.silent_frames,
        )
        for c in plan_chunks(frames, lead_frames=lead_frames, schedule=schedule)
    ]
