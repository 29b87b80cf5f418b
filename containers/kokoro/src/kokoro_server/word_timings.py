"""Word timings of a rendered segment: from the model's frames per token back to the written words.

Three steps, each a pure function:

1. :func:`align_words` — which phoneme tokens each written word produced. The segment's phonemes come from
   phonemizing the whole segment (espeak joins some words, such as "of the" → ``ʌvðə``, and reads "1,234" as
   several words), so each written word (:func:`relay_core.word_timings.split_words`) is phonemized alone and
   the concatenation is aligned to the segment's phonemes with :class:`difflib.SequenceMatcher`. Tokens the
   alignment leaves unmatched go to the word before them. Every token index is a symbol of
   ``Segment.phonemes`` (the tokenizer maps symbols one to one), so positions there are token positions.
2. :func:`word_sample_spans` — the sample span of each word in the segment's raw model output: token ``i``
   occupies frames ``sum(durations[:i + 1]) ..`` (``durations[0]`` is the leading padding token), one frame
   being ``frame_samples`` samples. Spaces and punctuation (pauses) are not part of any word's span.
   The model's sound runs ahead of its predicted frames, so :func:`fit_starts_to_sound` moves every boundary
   :data:`SOUND_LEAD_S` earlier and puts the start of a word that follows silence on its first audible window.
   Kokoro gives the silence after a phrase to its last phoneme (``ɹ`` of "here." may get 20 frames for 0.2 s of
   sound), so :func:`fit_to_sound` then pulls each word's end back to its last audible window.
3. :func:`place_on_timeline` — the one place where the silence policy's edit of the segment (samples cut at its
   start, pause put before it) and the segment's offset in the request are applied:
   ``t = offset + pause + clamp(t_raw - cut_start, 0, kept)``.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from kokoro_server.engines import Rendered, Segment
from relay_core.languages import Language
from relay_core.word_timings import MAX_WORD_CHARS, MAX_WORDS, WordTiming, WordTimings, split_words

NON_SPEECH_SYMBOLS = frozenset(" ;:,.!?¡¿—…\"«»“”()-'")
"""Phoneme-string symbols that are pauses or boundaries rather than speech."""
AUDIBLE_DBFS = -40.0
"""A window at or above this RMS level is sound (the level the benchmarks call audible)."""
SOUND_WINDOW_S = 0.005
"""The window of :func:`fit_to_sound` and :func:`fit_starts_to_sound`."""
SOUND_LEAD_S = 0.04
"""How far the model's sound runs ahead of its predicted frames. Measured on the int8 model over the first 12
corpus replies (raw segments, onsets after at least 30 ms under -60 dBFS): a segment's first word starts to sound
50 ms (median of 29; quartiles 35-55) before the frame its tokens were given, a word after a pause inside a
segment 35 ms (median of 51; quartiles 25-52). (Kokoro's own pipeline moves its timestamps 3 frames, 75 ms,
earlier.)"""
ONSET_SEARCH_S = 0.1
"""How far before its (led) start :func:`fit_starts_to_sound` looks for the onset of a word that follows silence."""


@dataclass(frozen=True, slots=True)
class WordTokens:
    """A written word and the half-open range of segment token positions that speak it (empty if none)."""

    word: str
    first: int
    end: int


def align_words(text: str, phonemes: str, phonemize: Callable[[str], str]) -> list[WordTokens]:
    """Assign each speech symbol of ``phonemes`` (the segment's, one symbol per token) to a written word of
    ``text``; ``phonemize`` gives one word's phonemes (filtered to the model's vocabulary).

    Guarantees: one entry per written word, in order; ranges never overlap and never go backwards; every speech
    symbol of ``phonemes`` belongs to exactly one word when ``text`` has any word."""
    spans = split_words(text)
    words = [text[start:end] for start, end in spans]
    if not words:
        return []
    reference: list[str] = []
    owners: list[int] = []
    for index, word in enumerate(words):
        for symbol in phonemize(word):
            if symbol not in NON_SPEECH_SYMBOLS:
                reference.append(symbol)
                owners.append(index)
    speech = [position for position, symbol in enumerate(phonemes) if symbol not in NON_SPEECH_SYMBOLS]
    owner_of: list[int | None] = [None] * len(speech)
    matcher = difflib.SequenceMatcher(None, reference, [phonemes[p] for p in speech], autojunk=False)
    for block in matcher.get_matching_blocks():
        for offset in range(block.size):
            owner_of[block.b + offset] = owners[block.a + offset]
    last = next((owner for owner in owner_of if owner is not None), 0)
    firsts: dict[int, int] = {}
    ends: dict[int, int] = {}
    for position, matched in zip(speech, owner_of, strict=True):
        owner = last if matched is None or matched < last else matched
        last = owner
        firsts.setdefault(owner, position)
        ends[owner] = position + 1
    result: list[WordTokens] = []
    cursor = 0
    for index, word in enumerate(words):
        first = firsts.get(index, cursor)
        end = ends.get(index, first)
        result.append(WordTokens(word=word, first=first, end=end))
        cursor = end
    return result


def word_sample_spans(
    words: Sequence[WordTokens], durations: Sequence[int], frame_samples: int
) -> list[tuple[int, int]]:
    """Each word's ``(start, end)`` sample span in the segment's raw model output.

    ``durations`` are the model's frames per token, padding included (``len(tokens) + 2`` values)."""
    starts = [0]
    for frames in durations:
        starts.append(starts[-1] + frames)
    spans: list[tuple[int, int]] = []
    previous_end = starts[1] * frame_samples if len(starts) > 1 else 0
    for word in words:
        if word.end > word.first:
            # token position p is model input p + 1 (after the leading padding token)
            start = starts[word.first + 1] * frame_samples
            end = starts[word.end + 1] * frame_samples
        else:
            start = end = previous_end
        spans.append((start, end))
        previous_end = end
    return spans


def fit_to_sound(
    spans: Sequence[tuple[int, int]], audio: npt.NDArray[np.float32], *, sample_rate: int
) -> list[tuple[int, int]]:
    """``spans`` with each end pulled back to the end of the word's last audible window (never moved later,
    never before the start; a word without any audible window keeps its span)."""
    window = max(1, round(SOUND_WINDOW_S * sample_rate))
    audible = _audible_windows(audio, window)
    count = len(audible)
    if count == 0:
        return list(spans)
    fitted: list[tuple[int, int]] = []
    for start, end in spans:
        first_window, last_window = start // window, min(count, -(-end // window))
        loud = np.flatnonzero(audible[first_window:last_window])
        sound_end = (first_window + int(loud[-1]) + 1) * window if loud.size else end
        fitted.append((start, max(start, min(end, sound_end))))
    return fitted


def _audible_windows(audio: npt.NDArray[np.float32], window: int) -> npt.NDArray[np.bool_]:
    count = len(audio) // window
    power = np.mean(np.square(audio[: count * window].reshape(count, window), dtype=np.float64), axis=1)
    return np.asarray(power >= 10 ** (AUDIBLE_DBFS / 10))


def fit_starts_to_sound(
    spans: Sequence[tuple[int, int]], audio: npt.NDArray[np.float32], *, sample_rate: int, previous_end: int = 0
) -> list[tuple[int, int]]:
    """``spans`` (from :func:`word_sample_spans`) moved onto the sound they name.

    Every start and end moves :data:`SOUND_LEAD_S` earlier (never below 0). Then a word whose start follows
    silence starts at its onset, the first audible window after that silence: searched from
    :data:`ONSET_SEARCH_S` before the start, never before the previous word's end and never after the word's
    predicted start. A start inside continuous sound keeps the lead only. Spans stay ordered and never
    overlap; an empty span stays empty. ``previous_end``: where the word before the first one ends (0: none).
    With no audio, only the lead is applied: the estimate a word gets before its audio is decoded."""
    window = max(1, round(SOUND_WINDOW_S * sample_rate))
    audible = _audible_windows(audio, window)
    lead, search = round(SOUND_LEAD_S * sample_rate), round(ONSET_SEARCH_S * sample_rate)
    fitted: list[tuple[int, int]] = []
    for predicted, predicted_end in spans:
        start = max(previous_end, predicted - lead)
        if predicted_end > predicted and len(audible):
            floor = max(previous_end, start - search) // window
            at = min(start // window, len(audible) - 1)
            if audible[at]:
                quiet = np.flatnonzero(~audible[floor:at])
                onset = (floor + int(quiet[-1]) + 1) * window if quiet.size else None
            else:
                loud = np.flatnonzero(audible[at : min(len(audible), -(-predicted // window))])
                onset = (at + int(loud[0])) * window if loud.size else None
            if onset is not None:
                start = min(max(onset, previous_end), predicted)
        end = max(start, predicted_end - lead) if predicted_end > predicted else start
        fitted.append((start, end))
        previous_end = end
    return fitted


@dataclass(frozen=True, slots=True)
class SegmentPlacement:
    """Where a segment's kept audio sits in the request: what the silence policy did to it, and its offset.

    The defaults describe a segment sent as the model rendered it, at the start of the request."""

    offset_samples: int = 0
    """Samples of the request's audio sent before this segment."""
    cut_start_samples: int = 0
    """Samples trimmed from the start of the model's output."""
    pause_samples: int = 0
    """Silence put before the kept audio."""
    kept_samples: int | None = None
    """Samples of model output kept after the cut (None: everything after ``cut_start_samples``)."""


def place_on_timeline(
    words: Sequence[WordTokens],
    spans: Sequence[tuple[int, int]],
    placement: SegmentPlacement,
    *,
    sample_rate: int,
) -> list[WordTiming]:
    """Word timings in seconds on the request's timeline (rounded to the millisecond), within the kept audio."""
    base = placement.offset_samples + placement.pause_samples
    timings: list[WordTiming] = []
    for word, (start, end) in zip(words, spans, strict=True):
        kept = placement.kept_samples
        first = max(0, start - placement.cut_start_samples)
        last = max(first, end - placement.cut_start_samples)
        if kept is not None:
            first, last = min(first, kept), min(last, kept)
        timings.append(
            WordTiming(
                word=word.word[:MAX_WORD_CHARS],
                start_s=round((base + first) / sample_rate, 3),
                end_s=round((base + last) / sample_rate, 3),
            )
        )
    return timings


@runtime_checkable
class TimedSpeechEngine(Protocol):
    """What word timings need from an engine (:class:`kokoro_server.engines.Engine` has it)."""

    def render_timed(self, segment: Segment, *, voice: str, speed: float) -> Rendered:
        """Render one segment with the frames per token."""
        ...

    def phonemize_word(self, word: str, language: Language | None = None) -> str:
        """One written word's phonemes in ``language``, filtered to the model's vocabulary."""
        ...


def segment_word_timings(
    engine: TimedSpeechEngine,
    segment: Segment,
    rendered: Rendered,
    placement: SegmentPlacement,
    *,
    request_id: str,
    sample_rate: int,
) -> WordTimings | None:
    """The ``word_timings`` message of one rendered segment placed in its request (all the steps above);
    None when the model gave no durations or the segment has no written word."""
    if rendered.durations is None:
        return None
    words = align_words(segment.text, segment.phonemes, partial(engine.phonemize_word, language=segment.language))[
        :MAX_WORDS
    ]
    if not words:
        return None
    spans = word_sample_spans(words, rendered.durations, rendered.frame_samples)
    led = fit_starts_to_sound(spans, rendered.audio, sample_rate=sample_rate)
    fitted = fit_to_sound(led, rendered.audio, sample_rate=sample_rate)
    return WordTimings(request_id, tuple(place_on_timeline(words, fitted, placement, sample_rate=sample_rate)))
