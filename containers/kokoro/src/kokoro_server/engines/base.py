"""What every Kokoro backend provides: a planned :class:`Segment` and the :class:`Synthesizer` protocol."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from relay_core import limits
from relay_core.languages import Language

SAMPLE_RATE = limits.SAMPLE_RATE
"""Kokoro-82M produces mono audio at 24 kHz."""

FRAME_SAMPLES = 600
"""Audio samples per predicted duration frame in Kokoro-82M (25 ms at 24 kHz): the decoder upsamples its
frames by 2 and the iSTFT generator by ``prod(upsample_rates) * hop`` = 10 * 6 * 5, so a segment's audio has
exactly ``sum(durations) * FRAME_SAMPLES`` samples."""


@dataclass(frozen=True)
class Segment:
    """One unit of synthesis: the source text, its Kokoro phonemes, and at most 510 token ids."""

    text: str
    phonemes: str
    tokens: tuple[int, ...]
    language: Language | None = None
    """The language it was read in (None: the server's default G2P); its words' phonemes are looked up in it."""


@dataclass(frozen=True, slots=True)
class Rendered:
    """One forward pass's result: the audio and, when the model says, how many frames each token got."""

    audio: npt.NDArray[np.float32]
    durations: tuple[int, ...] | None
    """Frames per input token, the two padding tokens included (so ``len(tokens) + 2`` values), or ``None``
    when the loaded model does not expose its duration predictor."""
    frame_samples: int = FRAME_SAMPLES
    """Samples per duration frame."""


@dataclass(frozen=True, slots=True)
class StreamedRender:
    """A segment whose front end has run: its durations now, its audio chunk by chunk as :attr:`chunks` is read.

    The chunks, concatenated, are the segment's audio (``sum(durations) * frame_samples`` samples); reading the
    iterator runs the decoder, so read it on a worker thread, one chunk per call if the caller wants to interleave.
    """

    durations: tuple[int, ...]
    chunks: Iterator[npt.NDArray[np.float32]]
    frame_samples: int = FRAME_SAMPLES


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

    def infer_timed(self, tokens: Sequence[int], style: npt.NDArray[np.float32], speed: float) -> Rendered:
        """Like :meth:`infer`, with the predicted frames per token (same single forward pass)."""
        ...

    @property
    def streams(self) -> bool:
        """Whether :meth:`stream_timed` decodes chunk by chunk (else it yields the whole audio once)."""
        ...

    def stream_timed(
        self, tokens: Sequence[int], style: npt.NDArray[np.float32], speed: float, *, chunked: bool = True
    ) -> StreamedRender:
        """Run the front end now; the audio comes as the returned chunks are read (``chunked=False``: one chunk)."""
        ...
