"""Word spans of one segment whose raw audio arrives chunk by chunk (the streaming decoder).

The word timings of a segment (:mod:`kokoro_server.word_timings`) come from the model's durations, known after the
front end, and from the audio: :func:`~kokoro_server.word_timings.fit_starts_to_sound` and
:func:`~kokoro_server.word_timings.fit_to_sound` read the audible 5 ms windows up to the end of each word's
predicted span, and each word's start depends on the word before it. So a word's fitted span is *final* once the
audio up to its predicted end has been decoded: :class:`SegmentWordClock` fits the words in order as the chunks
come, and gives each word once nothing still to come can change it.

Guarantee: at every point, :meth:`SegmentWordClock.final_spans` is a prefix of what the two fits give on the
segment's whole audio (the concatenated chunks), and after :meth:`SegmentWordClock.finish` it is all of it
(tested on random audio and on the real model). :meth:`SegmentWordClock.best_spans` adds, for the words not final
yet, the estimate the durations alone give (their predicted spans moved :data:`SOUND_LEAD_S` earlier), so every
word has a span from the front end on, before any of its audio is decoded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from kokoro_server.engines import Segment
from kokoro_server.word_timings import (
    SOUND_WINDOW_S,
    WordTokens,
    align_words,
    fit_starts_to_sound,
    fit_to_sound,
    word_sample_spans,
)
from relay_core.word_timings import MAX_WORDS


class SegmentWordClock:
    """The words of one segment (from its durations) and their fitted sample spans as its raw audio arrives.

    ``phonemize`` gives one written word's phonemes (the engine's ``phonemize_word``)."""

    def __init__(
        self,
        phonemize: Callable[[str], str],
        segment: Segment,
        durations: Sequence[int],
        *,
        frame_samples: int,
        sample_rate: int,
    ) -> None:
        self.words: list[WordTokens] = (
            align_words(segment.text, segment.phonemes, phonemize)[:MAX_WORDS] if durations else []
        )
        """Every written word of the segment, in order, as ``segment_word_timings`` takes them (none without
        durations: such a model gives no timings)."""
        self.predicted: list[tuple[int, int]] = word_sample_spans(self.words, durations, frame_samples)
        self._sample_rate = sample_rate
        self._window = max(1, round(SOUND_WINDOW_S * sample_rate))
        self._parts: list[npt.NDArray[np.float32]] = []
        self._samples = 0
        self._finished = False
        self._final: list[tuple[int, int]] = []

    @property
    def raw_samples(self) -> int:
        """Raw samples fed so far."""
        return self._samples

    def feed(self, chunk: npt.NDArray[np.float32]) -> None:
        """The segment's next raw chunk, in order."""
        if self._finished:
            raise RuntimeError("SegmentWordClock.feed after finish: feed every chunk before finishing the segment")
        self._parts.append(np.asarray(chunk, dtype=np.float32))
        self._samples += len(chunk)
        self._final = []

    def finish(self) -> None:
        """No more audio: every word becomes final."""
        self._finished = True
        self._final = []

    def final_spans(self) -> list[tuple[int, int]]:
        """The fitted spans of the leading words that no audio still to come can change, in order."""
        count = len(self.words) if self._finished else self._final_count()
        if len(self._final) != count:
            audio = np.concatenate(self._parts) if self._parts else np.zeros(0, dtype=np.float32)
            spans = self.predicted[:count]
            led = fit_starts_to_sound(spans, audio, sample_rate=self._sample_rate)
            self._final = fit_to_sound(led, audio, sample_rate=self._sample_rate)
        return list(self._final)

    def best_spans(self) -> tuple[list[tuple[int, int]], int]:
        """Every word's span as best known now, in order, and how many of them (a prefix) are final: the final
        spans, then the duration estimate of the rest (ordered after them, never overlapping)."""
        final = self.final_spans()
        previous_end = final[-1][1] if final else 0
        rest = fit_starts_to_sound(
            self.predicted[len(final) :],
            np.zeros(0, dtype=np.float32),
            sample_rate=self._sample_rate,
            previous_end=previous_end,
        )
        return final + rest, len(final)

    def _final_count(self) -> int:
        """How many leading words read only whole windows of the audio so far: a word's fits read the windows up
        to its predicted end (and the start fit clamps at the last window, so its start must lie before it)."""
        windows = self._samples // self._window
        count = 0
        for start, end in self.predicted:
            if start // self._window + 1 > windows or -(-end // self._window) > windows:
                break
            count += 1
        return count
