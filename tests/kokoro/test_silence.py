"""The silence policy as a pure function on audio: trimming, pauses by boundary, determinism, bookkeeping."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kokoro_server.policy import SpeechPolicy
from kokoro_server.silence import (
    OFF,
    Boundary,
    SilencePolicy,
    audible_span,
    boundary_after,
    first_audible_sample,
    shape_segment,
    silences,
)

RATE = 24_000


def ms(value: float) -> int:
    return round(value * RATE / 1000)


def tone(duration_ms: float, level: float = 0.3) -> npt.NDArray[np.float32]:
    t = np.arange(ms(duration_ms)) / RATE
    return (level * np.sin(2 * np.pi * 220 * t)).astype(np.float32)


def padded(lead_ms: float, body_ms: float, tail_ms: float, noise: float = 1e-4) -> npt.NDArray[np.float32]:
    """Like the model's output: quiet noise (-80 dBFS), a sound, quiet noise."""
    rng = np.random.default_rng(7)
    parts = [
        (noise * rng.standard_normal(ms(lead_ms))).astype(np.float32),
        tone(body_ms),
        (noise * rng.standard_normal(ms(tail_ms))).astype(np.float32),
    ]
    return np.concatenate(parts)


def test_trims_the_padding_and_keeps_the_margins() -> None:
    policy = SilencePolicy()
    audio = padded(250, 500, 700)
    shaped = shape_segment(audio, boundary=Boundary.START, policy=policy)
    assert shaped.pause_samples == 0
    # a window that reaches the threshold may start (or end) up to one window before (after) the sound
    window = ms(policy.window_ms)
    assert ms(250) - ms(policy.keep_head_ms) - window <= shaped.cut_start_samples <= ms(250) - ms(policy.keep_head_ms)
    assert ms(700) - ms(policy.keep_tail_ms) - window <= shaped.cut_end_samples <= ms(700) - ms(policy.keep_tail_ms)
    # the sound itself is untouched, sample for sample
    start = ms(250) - shaped.cut_start_samples
    assert np.array_equal(shaped.audio[start : start + ms(500)], tone(500))
    first = first_audible_sample(shaped.audio)
    assert first is not None
    assert first <= ms(policy.keep_head_ms) + window


@pytest.mark.parametrize(
    ("boundary", "pause_ms"),
    [
        (Boundary.START, 0),
        (Boundary.SENTENCE, 250),
        (Boundary.PARAGRAPH, 380),
        (Boundary.CLAUSE, 120),
        (Boundary.WORD, 0),
    ],
)
def test_pause_by_boundary(boundary: Boundary, pause_ms: float) -> None:
    shaped = shape_segment(padded(100, 200, 100), boundary=boundary, policy=SilencePolicy())
    assert shaped.pause_samples == ms(pause_ms)
    assert not shaped.audio[: shaped.pause_samples].any()
    assert shaped.kept_samples == len(shaped.audio) - shaped.pause_samples


def test_pauses_are_configurable_and_off_passes_audio_through() -> None:
    custom = SilencePolicy(sentence_pause_ms=300, paragraph_pause_ms=420)
    assert shape_segment(padded(10, 50, 10), boundary=Boundary.SENTENCE, policy=custom).pause_samples == ms(300)
    assert shape_segment(padded(10, 50, 10), boundary=Boundary.PARAGRAPH, policy=custom).pause_samples == ms(420)
    raw = padded(250, 100, 700)
    untouched = shape_segment(raw, boundary=Boundary.SENTENCE, policy=OFF)
    assert untouched.audio is raw or np.array_equal(untouched.audio, raw)
    assert (untouched.cut_start_samples, untouched.cut_end_samples, untouched.pause_samples) == (0, 0, 0)
    with pytest.raises(ValueError, match="sentence_pause_ms"):
        SilencePolicy(sentence_pause_ms=-1)
    with pytest.raises(ValueError, match="threshold_dbfs"):
        SilencePolicy(threshold_dbfs=3)


def test_a_silent_segment_is_cut_to_nothing() -> None:
    shaped = shape_segment(np.zeros(ms(300), dtype=np.float32), boundary=Boundary.SENTENCE, policy=SilencePolicy())
    assert len(shaped.audio) == 0
    assert shaped.cut_start_samples == ms(300)
    assert shape_segment(np.zeros(0, dtype=np.float32), boundary=Boundary.START, policy=SilencePolicy()).audio.size == 0


def test_measures() -> None:
    audio = np.concatenate([padded(100, 200, 0), np.zeros(ms(400), dtype=np.float32), tone(100)])
    first = first_audible_sample(audio)
    assert first is not None
    assert abs(first - ms(100)) <= ms(5)
    gaps = silences(audio)
    assert len(gaps) == 1
    assert abs((gaps[0][1] - gaps[0][0]) - ms(400)) <= ms(10)
    assert audible_span(np.zeros(100, dtype=np.float32), threshold_dbfs=-40, window_ms=5) is None
    assert first_audible_sample(np.zeros(10, dtype=np.float32)) is None


@pytest.mark.parametrize(
    ("previous", "gap", "expected"),
    [
        ("It is done.", " ", Boundary.SENTENCE),
        ("Really?", "", Boundary.SENTENCE),
        ('He said "yes."', " ", Boundary.SENTENCE),
        ("**Done!**", " ", Boundary.SENTENCE),
        ("First part.", "\n\n", Boundary.PARAGRAPH),
        ("A list item", "\n", Boundary.SENTENCE),
        ("Well,", " ", Boundary.CLAUSE),
        ("Note:", " ", Boundary.CLAUSE),
        ("Your order left the warehouse", " ", Boundary.WORD),
    ],
)
def test_boundary_after(previous: str, gap: str, expected: Boundary) -> None:
    assert boundary_after(previous, gap) is expected


@settings(max_examples=50, deadline=None)
@given(
    lead=st.integers(0, 400),
    body=st.integers(1, 300),
    tail=st.integers(0, 800),
    boundary=st.sampled_from(list(Boundary)),
)
def test_deterministic_and_never_shortens_the_sound(lead: int, body: int, tail: int, boundary: Boundary) -> None:
    audio = padded(lead, body, tail)
    first = shape_segment(audio, boundary=boundary, policy=SilencePolicy())
    again = shape_segment(audio.copy(), boundary=boundary, policy=SilencePolicy())
    assert first.audio.tobytes() == again.audio.tobytes()
    # bookkeeping: the output is the pause, then raw[cut_start : len - cut_end]
    kept = audio[first.cut_start_samples : len(audio) - first.cut_end_samples]
    assert np.array_equal(first.audio[first.pause_samples :], kept)
    # every sample of the sound survives
    assert first.cut_start_samples <= ms(lead)
    assert len(audio) - first.cut_end_samples >= ms(lead) + ms(body)


def test_speech_policy_first_fragment_default_applies_until_something_is_heard() -> None:
    policy = SpeechPolicy(first_fragment_words=4)
    assert policy.fragment_words(None, heard=False) == 4
    assert policy.fragment_words(None, heard=True) is None
    assert policy.fragment_words(0, heard=False) is None
    assert policy.fragment_words(2, heard=True) == 2
    # with the decoder streamed the default leaves the first sentence whole; a request's own choice still cuts
    assert policy.fragment_words(None, heard=False, streams=True) is None
    assert policy.fragment_words(3, heard=False, streams=True) == 3
    whole = SpeechPolicy(first_fragment_words=4, stream_decoder=False)
    assert whole.fragment_words(None, heard=False, streams=True) == 4  # an engine that streams, streaming off
    with pytest.raises(ValueError, match="first_fragment_words"):
        SpeechPolicy(first_fragment_words=0)
