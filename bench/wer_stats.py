"""Paired comparison of two ways of speaking the same texts by Whisper WER, with a bootstrap confidence interval.

Two arms' WERs over one corpus differ by less than Whisper's own noise unless the corpus is large; the question a
target asks ("streamed ≤ whole + 0.005") is about the *difference*, and each text is heard both ways, so the
difference is measured per text: the interval resamples texts (with their word counts) and says how far the
corpus's difference could move with other texts of the same kind. Both arms' edits come from the same normaliser
and edit distance as tests/asr_support.py. :func:`with_white_noise` makes the control arm: the same audio with
white noise far below it, a change no listener hears, which shows how far Whisper moves on its own.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class PairedDifference:
    """WER of arm B minus arm A over the corpus, and the bootstrap's central 95 % interval of that difference."""

    a: float
    b: float
    difference: float
    low: float
    high: float
    words: int

    def row(self) -> tuple[str, str, str, str]:
        return (f"{self.a:.4f}", f"{self.b:.4f}", f"{self.difference:+.4f}", f"[{self.low:+.4f}, {self.high:+.4f}]")


def edits_per_text(
    references: Sequence[str], heard: Sequence[str], wer: Callable[[list[str], list[str]], float], words: Sequence[int]
) -> list[int]:
    """Word edits of each text (its WER times its normalised word count)."""
    return [round(wer([ref], [hyp]) * n) for ref, hyp, n in zip(references, heard, words, strict=True)]


def paired_difference(
    words: Sequence[int], edits_a: Sequence[int], edits_b: Sequence[int], *, resamples: int = 4000, seed: int = 0
) -> PairedDifference:
    """B's WER minus A's over the texts, and a percentile bootstrap interval (texts resampled with replacement)."""
    total = sum(words)
    a, b = sum(edits_a) / total, sum(edits_b) / total
    rng = random.Random(seed)
    indices = range(len(words))
    diffs = []
    for _ in range(resamples):
        pick = rng.choices(indices, k=len(words))
        n = sum(words[i] for i in pick)
        diffs.append(sum(edits_b[i] - edits_a[i] for i in pick) / n)
    diffs.sort()
    return PairedDifference(
        a, b, b - a, diffs[int(0.025 * resamples)], diffs[min(resamples - 1, int(0.975 * resamples))], total
    )


def with_white_noise(audio: npt.NDArray[np.float32], snr_db: float, seed: int) -> npt.NDArray[np.float32]:
    """``audio`` plus white noise whose power is ``snr_db`` below the audio's (seeded, so a run can be repeated)."""
    noise = np.random.default_rng(seed).standard_normal(len(audio)).astype(np.float32)
    noise *= np.sqrt(np.mean(audio**2) / np.mean(noise**2) / 10 ** (snr_db / 10))
    return audio + noise
