"""Word timings of rendered segments: the token→word alignment, the frame→sample mapping, the placement on the
request's timeline, and (with the real model) timings that agree with the audio."""

from __future__ import annotations

import numpy as np
import pytest

from kokoro_server.engines import FRAME_SAMPLES, Engine
from kokoro_server.word_timings import (
    ONSET_SEARCH_S,
    SOUND_LEAD_S,
    SegmentPlacement,
    WordTokens,
    align_words,
    fit_starts_to_sound,
    fit_to_sound,
    place_on_timeline,
    segment_word_timings,
    word_sample_spans,
)
from relay_core.word_timings import WordTimings

LEXICON = {"Hello,": "həlˈO,", "of": "ʌv", "the": "ðə", "world.": "wˈɜɹld.", "42": "fˈɔɹɾi tˈu", "x": ""}


def _phonemize(word: str) -> str:
    return LEXICON[word]


def _spoken(phonemes: str, words: list[WordTokens]) -> list[str]:
    return [phonemes[w.first : w.end] for w in words]


def test_alignment_survives_words_that_espeak_joins() -> None:
    phonemes = "həlˈO, ʌvðɪ wˈɜɹld."  # "of the" spoken as one phoneme word, with another vowel
    words = align_words("Hello, of the world.", phonemes, _phonemize)
    assert [w.word for w in words] == ["Hello,", "of", "the", "world."]
    assert _spoken(phonemes, words) == ["həlˈO", "ʌv", "ðɪ", "wˈɜɹld"]


def test_a_number_read_as_two_words_is_one_written_word() -> None:
    phonemes = "fˈɔɹɾi tˈu ʌv"
    words = align_words("42 of", phonemes, _phonemize)
    assert _spoken(phonemes, words) == ["fˈɔɹɾi tˈu", "ʌv"]


def test_a_silent_word_gets_an_empty_range_where_it_stands() -> None:
    phonemes = "ʌv ðə"
    words = align_words("of x the", phonemes, _phonemize)
    assert [(w.word, w.first, w.end) for w in words] == [("of", 0, 2), ("x", 2, 2), ("the", 3, 5)]


def test_frames_map_to_samples_and_placement_applies_the_silence_edit_once() -> None:
    words = [WordTokens("a", 0, 2), WordTokens("b", 3, 4), WordTokens("c", 4, 4)]
    durations = [10, 2, 3, 5, 4, 20]  # padding, four tokens (the third a space), padding
    spans = word_sample_spans(words, durations, 600)
    assert spans == [(10 * 600, 15 * 600), (20 * 600, 24 * 600), (24 * 600, 24 * 600)]
    raw = place_on_timeline(words, spans, SegmentPlacement(), sample_rate=24_000)
    assert [(t.start_s, t.end_s) for t in raw] == [(0.25, 0.375), (0.5, 0.6), (0.6, 0.6)]
    # 0.2 s trimmed at the start, 0.1 s of pause put in front, after 1 s of earlier audio; 0.35 s kept
    placement = SegmentPlacement(
        offset_samples=24_000, cut_start_samples=4_800, pause_samples=2_400, kept_samples=8_400
    )
    placed = place_on_timeline(words, spans, placement, sample_rate=24_000)
    assert [(t.start_s, t.end_s) for t in placed] == [(1.15, 1.275), (1.4, 1.45), (1.45, 1.45)]


def test_word_ends_are_pulled_back_to_the_last_sound() -> None:
    audio = np.zeros(24_000, dtype=np.float32)
    audio[2_400:6_000] = 0.1  # sound 0.1 s .. 0.25 s, then silence
    spans = [(2_400, 12_000), (12_000, 14_400), (0, 1_200)]
    assert fit_to_sound(spans, audio, sample_rate=24_000) == [(2_400, 6_000), (12_000, 14_400), (0, 1_200)]


def test_words_start_with_their_sound_which_leads_the_frames() -> None:
    # 5 ms windows of 120 samples; the lead is 40 ms (960 samples), the onset search 100 ms (2,400 samples)
    audio = np.zeros(48_000, dtype=np.float32)
    audio[6_000:18_000] = 0.1  # words 1 and 2: sound from 0.25 s, no break between them
    audio[20_400:30_000] = 0.1  # word 3, after a pause: sound from 0.85 s
    audio[35_160:40_000] = 0.1  # word 4: sound from 1.465 s
    spans = [(7_200, 12_000), (12_000, 19_200), (22_080, 31_200), (35_520, 40_800), (40_800, 40_800)]
    assert fit_starts_to_sound(spans, audio, sample_rate=24_000) == [
        (6_000, 11_040),  # after silence: from its onset, 50 ms before its frame
        (11_040, 18_240),  # inside continuous sound: the lead only
        (20_400, 30_240),  # after a pause: back to its onset, 30 ms before the lead alone
        (35_160, 39_840),  # the lead put it in silence: forward to its onset, never after its frame
        (39_840, 39_840),  # an empty span stays empty where it stands
    ]


def test_fitted_starts_stay_ordered_near_their_frames() -> None:
    lead, search = round(SOUND_LEAD_S * 24_000), round(ONSET_SEARCH_S * 24_000)
    rng = np.random.default_rng(7)
    for _ in range(50):
        audio = np.repeat(rng.random(80) < 0.6, 600).astype(np.float32) * 0.1
        bounds = np.sort(rng.choice(np.arange(0, len(audio), 150), size=12, replace=False))
        spans = [(int(a), int(b)) for a, b in zip(bounds[::2], bounds[1::2], strict=True)]
        fitted = fit_starts_to_sound(spans, audio, sample_rate=24_000)
        previous_end = 0
        for (start, end), (predicted, predicted_end) in zip(fitted, spans, strict=True):
            assert previous_end <= start <= end <= predicted_end
            assert predicted - lead - search <= start <= predicted
            previous_end = end


TWO_SENTENCES = "The first sentence ends here. Then 1,234 words follow it."


def _quiet_runs(audio: np.ndarray, *, window: int = 240, floor_dbfs: float = -40.0) -> list[tuple[float, float]]:
    """(start_s, end_s) of runs of 10 ms windows quieter than ``floor_dbfs``."""
    frames = len(audio) // window
    levels = np.sqrt(np.mean(np.square(audio[: frames * window].reshape(frames, window), dtype=np.float64), axis=1))
    quiet = 20 * np.log10(np.maximum(levels, 1e-9)) < floor_dbfs
    runs: list[tuple[float, float]] = []
    start: int | None = None
    for index, is_quiet in enumerate([*quiet, False]):
        if is_quiet and start is None:
            start = index
        elif not is_quiet and start is not None:
            runs.append((start * window / 24_000, index * window / 24_000))
            start = None
    return runs


@pytest.mark.slow
def test_real_timings_are_ordered_inside_the_audio_and_the_pause_falls_between_sentences(
    onnx_engine: Engine,
) -> None:
    segments = onnx_engine.plan(TWO_SENTENCES, voice="jf_alpha", speed=1.0)
    assert len(segments) == 2
    timings: list[WordTimings] = []
    audio_parts = []
    offset = 0
    for segment in segments:
        rendered = onnx_engine.render_timed(segment, voice="jf_alpha", speed=1.0)
        assert rendered.frame_samples == FRAME_SAMPLES
        placed = segment_word_timings(
            onnx_engine, segment, rendered, SegmentPlacement(offset_samples=offset), request_id="r", sample_rate=24_000
        )
        assert placed is not None
        timings.append(placed)  # WordTimings checks order and non-overlap
        audio_parts.append(rendered.audio)
        offset += len(rendered.audio)
    audio = np.concatenate(audio_parts)
    first, second = timings[0].words, timings[1].words
    assert [w.word for w in (*first, *second)] == TWO_SENTENCES.split()
    total_s = len(audio) / 24_000
    assert all(0 <= w.start_s <= w.end_s <= total_s for w in (*first, *second))
    assert all(w.end_s > w.start_s for w in (*first, *second)), "every word here is voiced"
    assert first[-1].end_s <= second[0].start_s
    # the longest quiet run between the two sentences' speech lies between their timings (25 ms of slack)
    gap = max(
        (run for run in _quiet_runs(audio) if first[0].end_s < run[0] and run[1] < second[-1].start_s),
        key=lambda run: run[1] - run[0],
    )
    assert gap[1] - gap[0] > 0.2
    assert first[-1].end_s <= gap[0] + 0.025
    assert second[0].start_s >= gap[1] - 0.025
