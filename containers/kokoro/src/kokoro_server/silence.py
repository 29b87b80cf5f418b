"""The silence policy: trim the model's padding around each segment, then place pauses by rule.

Kokoro pads every rendered segment with near-silence (about 250 ms before the first phoneme and 550-800 ms after
the last, measured on the int8 model). Streamed sentence by sentence, that is a quarter second of dead air
before the first sound and about a second between sentences. :func:`shape_segment` fixes both, on the float
audio of one segment, before it is converted to PCM:

1. **Trim.** The audible span is where a sliding window of :attr:`SilencePolicy.window_ms` has an RMS level at
   or above :attr:`SilencePolicy.threshold_dbfs`. Everything before it, less :attr:`SilencePolicy.keep_head_ms`,
   and after it, less :attr:`SilencePolicy.keep_tail_ms`, is cut (the margins keep soft onsets and decays).
   The threshold is well under the -40 dBFS at which :func:`first_audible_sample` calls a sound audible, so no
   audible sound is cut. A segment with no audible sample at all is cut to nothing.
2. **Pause.** Zeros are put *before* the segment by the kind of boundary that precedes it (:class:`Boundary`):
   none before the first sound of a request that nobody has heard anything of yet (:attr:`Boundary.START`), a
   natural pause after a sentence, a longer one after a paragraph, a short one after a clause mark, and none
   inside a sentence cut at a word (the kept margins already sound like a word gap).

Guarantees: pure and deterministic (the same samples and boundary give the same output, bit for bit, on any
thread); the audible span is never shortened; the result says how many samples were cut at the start and the
end and how many pause samples were put in front (:class:`ShapedSegment`), so word timings computed on the
model's raw output can be moved onto the shaped audio: ``t_shaped = t_raw - cut_start + pause``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import numpy.typing as npt

from relay_core import limits
from relay_core.text.boundaries import TERMINATORS

FloatAudio = npt.NDArray[np.float32]

AUDIBLE_DBFS = -40.0
"""A sound is *audible* from the first window at or above this level (the benchmarks' first-sound measure)."""
AUDIBLE_WINDOW_MS = 5.0
"""The window of :func:`first_audible_sample`."""


class Boundary(StrEnum):
    """What comes before a segment, which decides the pause in front of it."""

    START = "start"
    """Nothing of this session has been heard yet: no pause (first sound as soon as possible)."""
    SENTENCE = "sentence"
    """After the end of a sentence (or a list item)."""
    PARAGRAPH = "paragraph"
    """After a blank line."""
    CLAUSE = "clause"
    """After a clause mark (comma, semicolon, colon, dash) where a text was cut."""
    WORD = "word"
    """Inside a sentence, at a word (a first fragment cut at a phrase boundary, or a forced cut)."""


@dataclass(frozen=True, slots=True)
class SilencePolicy:
    """How segments are trimmed and how long each pause is. ``enabled=False`` passes audio through untouched."""

    enabled: bool = True
    threshold_dbfs: float = -55.0
    """Trim threshold: windows quieter than this are padding."""
    window_ms: float = 5.0
    keep_head_ms: float = 10.0
    """Kept before the first window over the threshold."""
    keep_tail_ms: float = 40.0
    """Kept after the last window over the threshold (decays are softer than onsets)."""
    sentence_pause_ms: float = 250.0
    paragraph_pause_ms: float = 380.0
    clause_pause_ms: float = 120.0
    word_pause_ms: float = 0.0

    def __post_init__(self) -> None:
        for name in (
            "window_ms",
            "keep_head_ms",
            "keep_tail_ms",
            "sentence_pause_ms",
            "paragraph_pause_ms",
            "clause_pause_ms",
            "word_pause_ms",
        ):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0 <= value <= 5000):
                raise ValueError(f"silence policy {name}={value!r}: use a number of milliseconds from 0 to 5000")
        if self.window_ms <= 0:
            raise ValueError("silence policy window_ms must be positive")
        if not (math.isfinite(self.threshold_dbfs) and -120 <= self.threshold_dbfs < 0):
            raise ValueError(f"silence policy threshold_dbfs={self.threshold_dbfs!r}: use a level from -120 to 0")

    def pause_ms(self, boundary: Boundary) -> float:
        """The pause put before a segment that follows ``boundary``."""
        return {
            Boundary.START: 0.0,
            Boundary.SENTENCE: self.sentence_pause_ms,
            Boundary.PARAGRAPH: self.paragraph_pause_ms,
            Boundary.CLAUSE: self.clause_pause_ms,
            Boundary.WORD: self.word_pause_ms,
        }[boundary]


OFF = SilencePolicy(enabled=False)
"""The model's raw output: no trimming, no pauses."""


@dataclass(frozen=True, slots=True)
class ShapedSegment:
    """One segment's audio after the policy, and what the policy did to it (for word timings)."""

    audio: FloatAudio
    cut_start_samples: int
    """Samples of the model's output removed before the kept audio."""
    cut_end_samples: int
    """Samples of the model's output removed after the kept audio."""
    pause_samples: int
    """Zero samples put in front of the kept audio."""

    @property
    def kept_samples(self) -> int:
        return len(self.audio) - self.pause_samples


def _window_levels(audio: FloatAudio, window: int) -> npt.NDArray[np.float64]:
    """RMS of ``audio[i : i + window]`` for every start ``i`` (float64, exact cumulative sums)."""
    squares = np.square(audio.astype(np.float64))
    sums = np.concatenate(([0.0], np.cumsum(squares)))
    levels: npt.NDArray[np.float64] = np.sqrt(np.maximum(sums[window:] - sums[:-window], 0.0) / window)
    return levels


def audible_span(
    audio: FloatAudio, *, threshold_dbfs: float, window_ms: float, sample_rate: int = limits.SAMPLE_RATE
) -> tuple[int, int] | None:
    """``(start, end)`` of the audible part: from the first window at or above the level to the end of the last
    one; None when no window reaches it. Full scale (0 dBFS) is an RMS of 1.0."""
    if len(audio) == 0:
        return None
    window = max(1, min(len(audio), round(window_ms * sample_rate / 1000)))
    levels = _window_levels(audio, window)
    loud = np.flatnonzero(levels >= 10 ** (threshold_dbfs / 20))
    if len(loud) == 0:
        return None
    return int(loud[0]), int(loud[-1]) + window


def first_audible_sample(audio: FloatAudio, sample_rate: int = limits.SAMPLE_RATE) -> int | None:
    """The first sample of the first :data:`AUDIBLE_WINDOW_MS` window at or above :data:`AUDIBLE_DBFS`."""
    span = audible_span(audio, threshold_dbfs=AUDIBLE_DBFS, window_ms=AUDIBLE_WINDOW_MS, sample_rate=sample_rate)
    return None if span is None else span[0]


def pcm16_to_float(pcm: bytes) -> FloatAudio:
    """s16le bytes as float32 in [-1, 1] (for measuring PCM that was already sent)."""
    return (np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32767.0).astype(np.float32)


def silences(audio: FloatAudio, sample_rate: int = limits.SAMPLE_RATE) -> list[tuple[int, int]]:
    """The inaudible runs ``(start, end)`` between the first and the last audible window (at -40 dBFS)."""
    window = max(1, round(AUDIBLE_WINDOW_MS * sample_rate / 1000))
    if len(audio) < window:
        return []
    loud = _window_levels(audio, window) >= 10 ** (AUDIBLE_DBFS / 20)
    idx = np.flatnonzero(loud)
    if len(idx) == 0:
        return []
    gaps: list[tuple[int, int]] = []
    steps = np.diff(idx)
    for k in np.flatnonzero(steps > window):
        gaps.append((int(idx[k]) + window, int(idx[k + 1])))
    return gaps


def shape_segment(
    audio: FloatAudio, *, boundary: Boundary, policy: SilencePolicy, sample_rate: int = limits.SAMPLE_RATE
) -> ShapedSegment:
    """Trim ``audio`` (one rendered segment) and put the pause for ``boundary`` in front; see the module doc."""
    audio = np.asarray(audio, dtype=np.float32)
    if not policy.enabled:
        return ShapedSegment(audio=audio, cut_start_samples=0, cut_end_samples=0, pause_samples=0)
    span = audible_span(
        audio, threshold_dbfs=policy.threshold_dbfs, window_ms=policy.window_ms, sample_rate=sample_rate
    )
    if span is None:
        return ShapedSegment(
            audio=np.zeros(0, dtype=np.float32), cut_start_samples=len(audio), cut_end_samples=0, pause_samples=0
        )
    start = max(0, span[0] - round(policy.keep_head_ms * sample_rate / 1000))
    end = min(len(audio), span[1] + round(policy.keep_tail_ms * sample_rate / 1000))
    pause = round(policy.pause_ms(boundary) * sample_rate / 1000)
    shaped = np.concatenate((np.zeros(pause, dtype=np.float32), audio[start:end]))
    return ShapedSegment(audio=shaped, cut_start_samples=start, cut_end_samples=len(audio) - end, pause_samples=pause)


_CLOSING = "\"'”’»)]}*_`~"
_CLAUSE_END = ",;:—–-、，；："


def boundary_after(previous: str, gap: str) -> Boundary:
    """The boundary after the text ``previous`` when ``gap`` (the whitespace in the source) separates it from the
    next segment: a blank line is a paragraph, a sentence terminator (or a line break: a list item) a sentence, a
    clause mark a clause, anything else a cut at a word."""
    newlines = gap.count("\n") + gap.count("\u2029") * 2
    if newlines >= 2:
        return Boundary.PARAGRAPH
    tail = previous.rstrip().rstrip(_CLOSING)
    if tail and tail[-1] in TERMINATORS:
        return Boundary.SENTENCE
    if newlines == 1:
        return Boundary.SENTENCE
    if tail and tail[-1] in _CLAUSE_END:
        return Boundary.CLAUSE
    return Boundary.WORD
