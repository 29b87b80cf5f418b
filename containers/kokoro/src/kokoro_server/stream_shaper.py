"""The silence policy applied to a segment that arrives chunk by chunk (the streaming decoder).

:class:`StreamShaper` gives, chunk by chunk, exactly what :func:`kokoro_server.silence.shape_segment` gives for the
concatenated chunks: the leading padding is held until the first loud window, then everything up to the end of the
latest loud window goes out at once; the rest is held until a later loud window or the end of the segment, when
the kept tail is cut where the whole-segment policy would cut it. So a chunk's audible audio goes out the moment it
exists, and the policy's word-timing bookkeeping (cut at the start and the end, pause) is unchanged.
"""

from __future__ import annotations

import numpy as np

from kokoro_server.silence import (
    Boundary,
    FloatAudio,
    ShapedSegment,
    SilencePolicy,
    _window_levels,
    shape_segment,
)
from relay_core import limits


class StreamShaper:
    """Shape one segment incrementally: :meth:`push` each raw chunk in order, then :meth:`finish` once."""

    def __init__(self, *, boundary: Boundary, policy: SilencePolicy, sample_rate: int = limits.SAMPLE_RATE) -> None:
        self._boundary = boundary
        self._policy = policy
        self._sample_rate = sample_rate
        self._window = max(1, round(policy.window_ms * sample_rate / 1000))
        self._threshold = 10 ** (policy.threshold_dbfs / 20)
        self._head = round(policy.keep_head_ms * sample_rate / 1000)
        self._tail = round(policy.keep_tail_ms * sample_rate / 1000)
        self._pause = round(policy.pause_ms(boundary) * sample_rate / 1000)
        self._parts: list[FloatAudio] = []
        self._raw = np.zeros(0, dtype=np.float32)
        self._next_window = 0
        self._first_loud: int | None = None
        self._loud_end = 0
        self._sent_until: int | None = None
        self.result: ShapedSegment | None = None
        """What the policy did, set by :meth:`finish` (its ``audio`` is empty: it was returned piece by piece)."""

    @property
    def raw_samples(self) -> int:
        return len(self._raw)

    @property
    def cut_start_samples(self) -> int | None:
        """Raw samples cut at the start, once known (the first loud window seen, or the policy off); else None."""
        if not self._policy.enabled:
            return 0
        return None if self._first_loud is None else max(0, self._first_loud - self._head)

    @property
    def pause_samples(self) -> int:
        """The pause put before the segment's kept audio once it has sound (0 with the policy off)."""
        return self._pause if self._policy.enabled else 0

    @property
    def kept_at_least(self) -> int:
        """A raw position the kept audio reaches whatever chunks come next (0 before the first loud window): the
        end of the latest loud window plus the kept tail, within the raw audio so far."""
        if not self._policy.enabled:
            return len(self._raw)
        if self._first_loud is None:
            return 0
        return min(len(self._raw), self._loud_end + self._tail)

    def push(self, chunk: FloatAudio) -> FloatAudio:
        """Take the next raw chunk; return the shaped audio that is now certain (may be empty)."""
        chunk = np.asarray(chunk, dtype=np.float32)
        self._raw = np.concatenate((self._raw, chunk))
        if not self._policy.enabled:
            return chunk
        start = self._next_window
        if len(self._raw) - start >= self._window:
            levels = _window_levels(self._raw[start:], self._window)
            loud = np.flatnonzero(levels >= self._threshold)
            if len(loud):
                if self._first_loud is None:
                    self._first_loud = start + int(loud[0])
                self._loud_end = start + int(loud[-1]) + self._window
            self._next_window = start + len(levels)
        return self._emit(self._loud_end)

    def finish(self) -> FloatAudio:
        """The held tail the whole-segment policy keeps; sets :attr:`result`."""
        total = len(self._raw)
        if not self._policy.enabled:
            self.result = ShapedSegment(
                audio=np.zeros(0, np.float32), cut_start_samples=0, cut_end_samples=0, pause_samples=0
            )
            return np.zeros(0, dtype=np.float32)
        if self._sent_until is None and total < self._window:
            whole = shape_segment(
                self._raw, boundary=self._boundary, policy=self._policy, sample_rate=self._sample_rate
            )
            self.result = ShapedSegment(
                audio=np.zeros(0, np.float32),
                cut_start_samples=whole.cut_start_samples,
                cut_end_samples=whole.cut_end_samples,
                pause_samples=whole.pause_samples,
            )
            return whole.audio
        if self._first_loud is None:
            self.result = ShapedSegment(
                audio=np.zeros(0, np.float32), cut_start_samples=total, cut_end_samples=0, pause_samples=0
            )
            return np.zeros(0, dtype=np.float32)
        end = min(total, self._loud_end + self._tail)
        tail = self._emit(end)
        start = max(0, self._first_loud - self._head)
        self.result = ShapedSegment(
            audio=np.zeros(0, np.float32),
            cut_start_samples=start,
            cut_end_samples=total - end,
            pause_samples=self._pause,
        )
        return tail

    def _emit(self, until: int) -> FloatAudio:
        if self._first_loud is None:
            return np.zeros(0, dtype=np.float32)
        pieces: list[FloatAudio] = []
        if self._sent_until is None:
            self._sent_until = max(0, self._first_loud - self._head)
            pieces.append(np.zeros(self._pause, dtype=np.float32))
        if until > self._sent_until:
            pieces.append(self._raw[self._sent_until : until])
            self._sent_until = until
        return np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.float32)
