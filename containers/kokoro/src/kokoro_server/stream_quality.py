"""How close streamed audio is to the whole-segment decode: the measures behind the streaming default.

- :func:`log_mel_distance`: mean absolute difference of log-mel spectra (natural log, 80 bands, 25 ms windows,
  10 ms hop), in nepers: a level- and phase-robust spectral distance;
- :func:`snr_db`: the whole segment's energy over the energy of the difference (waveform, so phase-sensitive);
- :func:`seam_jumps`: the largest sample-to-sample step at chunk seams and the largest anywhere else: a click
  at a seam shows as a seam step above every step inside the chunks.

Pure numpy; bench/bench_streaming_quality.py reports them over the corpus and tests/kokoro check the thresholds.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np
import numpy.typing as npt

from relay_core import limits

FloatAudio = npt.NDArray[np.float32]

_N_FFT = 600
_HOP = 240
_BANDS = 80


@cache
def _mel_filters(sample_rate: int) -> npt.NDArray[np.float64]:
    def mel(hz: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        return 2595.0 * np.log10(1.0 + hz / 700.0)

    def hz(m: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        return 700.0 * (10 ** (m / 2595.0) - 1.0)

    edges = hz(np.linspace(mel(np.array(0.0)), mel(np.array(sample_rate / 2)), _BANDS + 2))
    freqs = np.fft.rfftfreq(_N_FFT, 1 / sample_rate)
    filters = np.zeros((_BANDS, len(freqs)))
    for band in range(_BANDS):
        low, centre, high = edges[band : band + 3]
        rising = (freqs - low) / max(centre - low, 1e-9)
        falling = (high - freqs) / max(high - centre, 1e-9)
        filters[band] = np.maximum(0.0, np.minimum(rising, falling))
    return filters


def log_mel(audio: FloatAudio, sample_rate: int = limits.SAMPLE_RATE) -> npt.NDArray[np.float64]:
    """``[frames, 80]`` log-mel energies (floor 1e-5) of ``audio``."""
    padded = np.pad(np.asarray(audio, dtype=np.float64), (0, max(0, _N_FFT - len(audio))))
    count = 1 + (len(padded) - _N_FFT) // _HOP
    frames = np.stack([padded[i * _HOP : i * _HOP + _N_FFT] for i in range(count)]) * np.hanning(_N_FFT)
    power = np.abs(np.fft.rfft(frames, axis=1)) ** 2
    return np.log(np.maximum(power @ _mel_filters(sample_rate).T, 1e-5))


def log_mel_distance(reference: FloatAudio, other: FloatAudio, sample_rate: int = limits.SAMPLE_RATE) -> float:
    """Mean |log-mel(reference) - log-mel(other)| over the frames both have (same-length audio expected)."""
    a, b = log_mel(reference, sample_rate), log_mel(other, sample_rate)
    rows = min(len(a), len(b))
    return float(np.mean(np.abs(a[:rows] - b[:rows])))


def snr_db(reference: FloatAudio, other: FloatAudio) -> float:
    """10 log10(energy of ``reference`` / energy of ``other - reference``); inf when they are equal."""
    ref = np.asarray(reference, dtype=np.float64)
    noise = float(np.sum((np.asarray(other, dtype=np.float64)[: len(ref)] - ref) ** 2))
    return float("inf") if noise == 0.0 else float(10 * np.log10(np.sum(ref**2) / noise))


def seam_jumps(audio: FloatAudio, seams: Sequence[int]) -> tuple[float, float]:
    """``(largest |step| across a seam, largest |step| elsewhere)``; a seam at sample ``s`` is the step s-1 -> s."""
    steps = np.abs(np.diff(np.asarray(audio, dtype=np.float64)))
    at = np.array([s - 1 for s in seams if 0 < s < len(audio)], dtype=np.int64)
    seam = float(steps[at].max()) if len(at) else 0.0
    inside = np.delete(steps, at)
    return seam, float(inside.max()) if len(inside) else 0.0
