"""SegmentWordClock: a streamed segment's word spans, final word by word as its chunks arrive.

The property: on any audio, any durations and any cutting of the audio into chunks, what the clock calls final
after each chunk is a prefix of the whole-audio fit, every word whose predicted span (plus one 5 ms window) is
decoded is final, and after the last chunk the clock gives the whole fit.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from kokoro_server.engines import Segment
from kokoro_server.word_clock import SegmentWordClock
from kokoro_server.word_timings import align_words, fit_starts_to_sound, fit_to_sound, word_sample_spans

RATE = 24_000
FRAME = 600
WINDOW = 120
TEXT = "ab cde, f ghij kl mno pq."


class Letters:
    """Phonemizes a word as its letters (each letter one token): the alignment is the identity."""

    def phonemize_word(self, word: str) -> str:
        return word


def _segment() -> Segment:
    return Segment(text=TEXT, phonemes=TEXT, tokens=tuple(range(1, len(TEXT) + 1)))


@pytest.mark.parametrize("seed", range(30))
def test_final_spans_are_a_prefix_of_the_whole_fit_and_complete_at_the_end(seed: int) -> None:
    rng = np.random.default_rng(seed)
    durations = [int(d) for d in rng.integers(1, 9, size=len(TEXT) + 2)]
    samples = sum(durations) * FRAME
    # mostly sound, with a few silent gaps: a word's fit then depends on the audio up to its very end
    audio = (rng.standard_normal(samples) * 0.2).astype(np.float32)
    for _ in range(int(rng.integers(2, 8))):
        start = int(rng.integers(0, samples))
        end = min(samples, start + int(rng.integers(200, 6000)))
        audio[start:end] = 1e-4 * rng.standard_normal(end - start)
    words = align_words(TEXT, TEXT, Letters().phonemize_word)
    predicted = word_sample_spans(words, durations, FRAME)
    whole = fit_to_sound(fit_starts_to_sound(predicted, audio, sample_rate=RATE), audio, sample_rate=RATE)

    clock = SegmentWordClock(Letters().phonemize_word, _segment(), durations, frame_samples=FRAME, sample_rate=RATE)
    assert clock.words == words
    assert clock.predicted == predicted
    # cut near word ends (up to 150 ms before, on, just after), where a too eager clock would go wrong
    ends = [end for _, end in predicted if 0 < end < samples]
    near = {
        min(samples - 1, max(1, int(rng.choice(ends)) + int(rng.integers(-30 * WINDOW, 3 * WINDOW)))) for _ in range(4)
    }
    cuts = [0, *sorted(near), samples]
    for a, b in itertools.pairwise(cuts):
        clock.feed(audio[a:b])
        final = clock.final_spans()
        assert final == whole[: len(final)]
        decoded = (b // WINDOW) * WINDOW
        must = next((i for i, (_, end) in enumerate(predicted) if end + WINDOW > decoded), len(predicted))
        assert len(final) >= must, "a word whose audio is all decoded is final"
    clock.finish()
    assert clock.final_spans() == whole


def test_without_durations_there_are_no_words() -> None:
    clock = SegmentWordClock(Letters().phonemize_word, _segment(), (), frame_samples=FRAME, sample_rate=RATE)
    clock.feed(np.zeros(FRAME, dtype=np.float32))
    clock.finish()
    assert clock.words == [] and clock.final_spans() == []


def test_feeding_after_finish_is_refused() -> None:
    clock = SegmentWordClock(
        Letters().phonemize_word, _segment(), [1] * (len(TEXT) + 2), frame_samples=FRAME, sample_rate=RATE
    )
    clock.finish()
    with pytest.raises(RuntimeError, match="feed every chunk before finishing"):
        clock.feed(np.zeros(10, dtype=np.float32))
