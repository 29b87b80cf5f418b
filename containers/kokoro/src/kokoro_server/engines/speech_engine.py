"""What the server needs from an engine: :class:`SpeechEngine`, satisfied by :class:`kokoro_server.engines.Engine`.

The server depends on this protocol rather than on the concrete engine so that tests can wrap a real engine
(to make one render fail, for instance) without touching the main path.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt

from kokoro_server.engines.base import Segment


class SpeechEngine(Protocol):
    """A loaded text-to-speech model. Every method may be called from several threads at once."""

    name: str
    sample_rate: int
    default_voice: str

    def voices(self) -> list[str]:
        """The voice names, sorted."""
        ...

    def check_voice(self, spec: str) -> None:
        """Raise ``UnknownVoiceError`` or ``InvalidRequestError`` if ``spec`` (a name or a blend) cannot be used."""
        ...

    def plan(self, text: str, *, voice: str, speed: float) -> list[Segment]:
        """G2P and split into segments of at most 510 tokens (blocking)."""
        ...

    def render(self, segment: Segment, *, voice: str, speed: float) -> npt.NDArray[np.float32]:
        """Synthesize one segment (blocking); float32 mono at :attr:`sample_rate`."""
        ...
