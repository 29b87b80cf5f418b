"""What the smoke test accepts as speech: valid s16le PCM, not silent, of a plausible duration for its text."""

from __future__ import annotations

import math
import sys
from array import array
from dataclasses import dataclass
from typing import Final

from relay_core.audio_piece import AudioPiece
from relay_core.errors import AudioFormatError
from relay_functions.ops.errors import SmokeCheckError

MIN_RMS: Final = 200.0
"""Root-mean-square amplitude (of 32767) below which audio counts as silence."""
MIN_CHARS_PER_S: Final = 3.0
MAX_CHARS_PER_S: Final = 40.0
"""Speech at speed 1.0 runs at about 12-18 characters per second; outside 3-40 something is wrong."""


@dataclass(frozen=True, slots=True)
class AudioFigures:
    duration_s: float
    rms: float
    peak: int


def check_speech(pcm: bytes, text: str, *, what: str) -> AudioFigures:
    """Figures of ``pcm``; :class:`SmokeCheckError` naming ``what`` unless it is plausible speech for ``text``."""
    if not pcm:
        raise SmokeCheckError(f"{what}: no audio at all")
    try:
        piece = AudioPiece.pcm(pcm)
    except AudioFormatError as exc:
        raise SmokeCheckError(f"{what}: {len(pcm)} bytes of PCM is not whole 16-bit samples ({exc.message})") from exc
    samples = array("h")
    samples.frombytes(pcm)
    if sys.byteorder == "big":  # pragma: no cover - little-endian hosts
        samples.byteswap()
    rms = math.sqrt(sum(s * s for s in samples) / len(samples))
    peak = max(abs(s) for s in samples)
    duration = piece.duration_s
    if rms < MIN_RMS:
        raise SmokeCheckError(f"{what}: {duration:.2f} s of audio is silent (RMS {rms:.0f} < {MIN_RMS:.0f})")
    chars = len(text.strip())
    shortest, longest = chars / MAX_CHARS_PER_S, chars / MIN_CHARS_PER_S + 1.0
    if not shortest <= duration <= longest:
        raise SmokeCheckError(
            f"{what}: {duration:.2f} s of audio for {chars} characters is implausible "
            f"(expected {shortest:.1f}-{longest:.1f} s)"
        )
    return AudioFigures(duration_s=round(duration, 3), rms=round(rms, 1), peak=peak)


__all__ = ["AudioFigures", "check_speech"]
