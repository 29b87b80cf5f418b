"""What every Kokoro backend provides: a planned :class:`Segment` and the :class:`Synthesizer` protocol."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from relay_core import limits

SAMPLE_RATE = limits.SAMPLE_RATE
"""Kokoro-82M produces mono audio at 24 kHz."""


@dataclass(frozen=True)
class Segment:
    """One unit of synthesis: the source text, its Kokoro phonemes, and at most 510 token ids."""

    text: str
    phonemes: str
    tokens: tuple[int, ...]


class Synthesizer(Protocol):
    """The raw network: one forward pass from tokens, a style row and a speed to audio.

    Implementations load their model in ``__init__``, are immutable afterwards, and allow
    concurrent :meth:`infer` calls from several threads.
    """

    name: str
    sample_rate: int

    def infer(self, tokens: Sequence[int], style: npt.NDArray[np.float32], speed: float) -> npt.NDArray[np.float32]:
        """Synthesize unpadded ``tokens`` (1..510) with a ``[1, 256]`` style; float32 mono, blocking."""
        ...
