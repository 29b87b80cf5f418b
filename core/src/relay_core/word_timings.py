"""Word timings: when each written word is spoken, on the audio timeline of a request (or of an agent turn).

One message, the same on every transport that carries it (opt-in with ``"timings": true`` on the request):

- TTS session (§1): a JSON text frame sent *before* the PCM of the segment it describes;
- ``/invocations`` SSE (§2): an event ``word_timings`` before that segment's ``audio_chunk`` events;
- agent events (§3): an event ``word_timings`` before that segment's audio, with times on the turn's timeline.

``{"type": "word_timings", "request_id": "r1", "words": [{"word": "Hello,", "start_s": 0.0, "end_s": 0.41}]}``

Timings never wait for audio (docs/protocol.md, *Word timings*). A word's place is known from the model's durations
before its audio is decoded, but its span is only *final* once the audio around it has been fitted; a word that is
not final yet is sent with ``"final": false`` (an estimate from the durations) and sent again, final, in a later
message of the same request. Such a later message carries ``"index"``: the position of its first word among the
request's (or the turn's) words. The one rule for every consumer (:func:`apply_word_timings`): a message with
``index`` replaces the words held from that position on; a message without it appends. So every word's timing
arrives no later than its audio, and the words held are always the best known.

A *written word* is a run of non-space characters of the request text (:func:`split_words`): punctuation stays
with its word ("Hello,"), a number read as several spoken words is one written word ("1,234"), and a run of
punctuation alone (a dash between spaces) joins the word before it. ``start_s``/``end_s`` span the word's speech
(pauses at punctuation are not part of it); they never decrease from one word to the next, and a word the model
did not voice gets a zero-length span where it stands.

The barge-in rule lives here too, so that the agent and every client agree on it: a word counts as *heard* once
playback has passed its midpoint (:func:`words_heard`).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from relay_core import limits
from relay_core.errors import InvalidFieldError, LimitExceededError
from relay_core.fields import JsonObject, decode_json_object, encode_json, get_str

WORD_TIMINGS_TYPE = "word_timings"
"""The ``type`` of the message (and the SSE event name) on every transport."""
TIMINGS_FIELD = "timings"
"""The request field that asks for word timings (a boolean, default false)."""
PLAYED_MS_FIELD = "played_ms"
"""The cancel field that says how many milliseconds of the turn's audio the listener heard."""
INTERRUPTED_MARK = "[interrupted]"
"""Appended (after a space and an ellipsis) to a reply that was cut at a barge-in, in conversation history."""
MAX_WORDS = limits.MAX_PHONEME_TOKENS
"""Most words in one message: a segment has at most 510 tokens, and every spoken word has at least one."""
MAX_WORD_CHARS = 200
"""Longest written word carried; longer runs of non-space characters are cut to this (the times stay right)."""
MAX_PLAYED_MS = 24 * 60 * 60 * 1000
"""Largest ``played_ms`` accepted (a day of audio)."""
MAX_WORD_INDEX = 10_000_000
"""Largest ``index`` accepted: far more words than any request or turn speaks."""

_WORD = re.compile(r"\S+")


def _number(obj: Mapping[str, Any], name: str) -> float:
    value = obj.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidFieldError(f"field {name!r} must be a number of seconds")
    return float(value)


def split_words(text: str) -> list[tuple[int, int]]:
    """The written words of ``text`` as ``(start, end)`` character spans, in order (see the module doc).

    A run of characters without any letter or digit joins the word before it; leading such runs join the first
    word. Text without any letter or digit is one word (or none, if it is blank)."""
    spans: list[tuple[int, int]] = []
    pending_start: int | None = None
    for match in _WORD.finditer(text):
        start, end = match.span()
        if not any(char.isalnum() for char in match.group()):
            if spans:
                spans[-1] = (spans[-1][0], end)
            elif pending_start is None:
                pending_start = start
            continue
        if pending_start is not None:
            start, pending_start = pending_start, None
        spans.append((start, end))
    if pending_start is not None:
        last = text.rstrip()
        spans.append((pending_start, len(last)))
    return spans


@dataclass(frozen=True, slots=True)
class WordTiming:
    """One written word and the span of its speech, in seconds from the start of the timeline."""

    word: str
    start_s: float
    end_s: float
    final: bool = True
    """False: an estimate from the model's durations, to be replaced by a later message (see the module doc)."""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.start_s) and math.isfinite(self.end_s) and 0 <= self.start_s <= self.end_s):
            raise InvalidFieldError(
                f"word {self.word[:40]!r}: start_s {self.start_s!r} and end_s {self.end_s!r} must be finite "
                "with 0 <= start_s <= end_s"
            )
        if not self.word:
            raise InvalidFieldError("a word timing needs a non-empty 'word'")

    @property
    def midpoint_s(self) -> float:
        return (self.start_s + self.end_s) / 2

    def shifted(self, offset_s: float) -> WordTiming:
        """The same word ``offset_s`` seconds later (to move a request's timings onto a turn's timeline)."""
        return WordTiming(
            self.word, round(self.start_s + offset_s, 3), round(self.end_s + offset_s, 3), final=self.final
        )

    def to_json(self) -> JsonObject:
        entry: JsonObject = {"word": self.word, "start_s": self.start_s, "end_s": self.end_s}
        if not self.final:
            entry["final"] = False
        return entry


@dataclass(frozen=True, slots=True)
class WordTimings:
    """The word timings of one segment of a request (or of an agent turn), in spoken order."""

    request_id: str
    words: tuple[WordTiming, ...]
    index: int | None = None
    """Position of the first word among the request's (or turn's) words: the words held from there on are
    replaced (:func:`apply_word_timings`). None: the words are appended."""
    type: str = field(default=WORD_TIMINGS_TYPE, init=False)

    def __post_init__(self) -> None:
        if not self.request_id:
            raise InvalidFieldError("word_timings needs a request_id")
        if self.index is not None and not 0 <= self.index <= MAX_WORD_INDEX:
            raise InvalidFieldError(f"'index' must be a whole number from 0 to {MAX_WORD_INDEX}; got {self.index!r}")
        if len(self.words) > MAX_WORDS:
            raise LimitExceededError(f"word_timings carries {len(self.words)} words; the limit is {MAX_WORDS}")
        for before, after in itertools.pairwise(self.words):
            if after.start_s < before.start_s or after.start_s < before.end_s:
                raise InvalidFieldError(
                    f"word {after.word[:40]!r} starts at {after.start_s} before word {before.word[:40]!r} "
                    f"ends at {before.end_s}: timings must be in spoken order"
                )

    @property
    def final(self) -> bool:
        """Every word of the message is final."""
        return all(word.final for word in self.words)

    def shifted(
        self, offset_s: float, *, request_id: str | None = None, words_before: int | None = None
    ) -> WordTimings:
        """Every word ``offset_s`` later, optionally under another request id (the agent's turn id); with
        ``words_before`` (the words the new timeline holds before this request's), an ``index`` moves onto that
        timeline too (a message without one still appends)."""
        index = self.index
        if words_before is not None:
            index = words_before + (index or 0) if index is not None else None
        return WordTimings(
            request_id or self.request_id, tuple(word.shifted(offset_s) for word in self.words), index=index
        )

    def to_json(self) -> JsonObject:
        obj: JsonObject = {"type": self.type, "request_id": self.request_id}
        if self.index is not None:
            obj["index"] = self.index
        obj["words"] = [w.to_json() for w in self.words]
        return obj


def apply_word_timings(held: list[WordTiming], message: WordTimings) -> None:
    """Apply one ``word_timings`` message to the words a consumer holds (the rule in the module doc): from
    ``message.index`` on, they are replaced by the message's words; without ``index`` the words are appended.
    An ``index`` beyond the words held appends (nothing in between is invented)."""
    if message.index is not None:
        del held[message.index :]
    held.extend(message.words)


CAPTIONED_SPEECH_PATH = "/dev/captioned_speech"
"""The container's route that answers one JSON object with the whole audio and its word timings."""


@dataclass(frozen=True, slots=True)
class CaptionedSpeech:
    """The answer of ``POST /dev/captioned_speech``: the whole file (base64) and every word's timing in it."""

    request_id: str
    format: str
    sample_rate: int
    duration_s: float
    audio: str
    """Base64 of the whole file in ``format`` (raw s16le for ``pcm``)."""
    words: tuple[WordTiming, ...]

    def to_json(self) -> JsonObject:
        return {
            "request_id": self.request_id,
            "format": self.format,
            "sample_rate": self.sample_rate,
            "duration_s": self.duration_s,
            "audio": self.audio,
            "words": [word.to_json() for word in self.words],
        }


def parse_captioned_speech(data: str | bytes | JsonObject) -> CaptionedSpeech:
    """Parse a ``/dev/captioned_speech`` answer. Raises only ``ProtocolError`` subclasses."""
    obj = data if isinstance(data, dict) else decode_json_object(data, max_bytes=1 << 30, what="answer")
    timings = parse_word_timings(
        {"type": WORD_TIMINGS_TYPE, "request_id": obj.get("request_id"), "words": obj.get("words")}
    )
    fmt = get_str(obj, "format", required=True, allow_empty=False, max_chars=16)
    audio = get_str(obj, "audio", required=True)
    sample_rate = obj.get("sample_rate")
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, int) or sample_rate < 1:
        raise InvalidFieldError("'sample_rate' must be a positive whole number")
    assert fmt is not None
    assert audio is not None
    return CaptionedSpeech(
        request_id=timings.request_id,
        format=fmt,
        sample_rate=sample_rate,
        duration_s=_number(obj, "duration_s"),
        audio=audio,
        words=timings.words,
    )


def parse_timings_flag(obj: Mapping[str, Any]) -> bool:
    """The request's ``timings`` field: a boolean, false when absent."""
    value = obj.get(TIMINGS_FIELD, False)
    if not isinstance(value, bool):
        raise InvalidFieldError(f"'{TIMINGS_FIELD}' must be true or false")
    return value


def serialize_word_timings(message: WordTimings) -> str:
    return encode_json(message.to_json())


def _word(item: object) -> WordTiming:
    if not isinstance(item, dict):
        raise InvalidFieldError("each entry of 'words' must be an object {word, start_s, end_s}")
    word = get_str(item, "word", required=True, allow_empty=False, max_chars=MAX_WORD_CHARS)
    assert word is not None
    final = item.get("final", True)
    if not isinstance(final, bool):
        raise InvalidFieldError("a word's 'final' must be true or false")
    return WordTiming(word=word, start_s=_number(item, "start_s"), end_s=_number(item, "end_s"), final=final)


def _index(obj: Mapping[str, Any]) -> int | None:
    value = obj.get("index")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidFieldError(f"'index' must be a whole number from 0 to {MAX_WORD_INDEX}")
    return value


def parse_word_timings(data: str | bytes | JsonObject) -> WordTimings:
    """Parse and check a ``word_timings`` message. Raises only ``ProtocolError`` subclasses."""
    obj = data if isinstance(data, dict) else decode_json_object(data, max_bytes=limits.APIGW_MESSAGE_BYTES)
    if obj.get("type") != WORD_TIMINGS_TYPE:
        raise InvalidFieldError(f"'type' must be {WORD_TIMINGS_TYPE!r}")
    request_id = get_str(obj, "request_id", required=True, allow_empty=False, max_chars=limits.MAX_REQUEST_ID_CHARS)
    assert request_id is not None
    words = obj.get("words")
    if not isinstance(words, list):
        raise InvalidFieldError("'words' must be a list of {word, start_s, end_s}")
    if len(words) > MAX_WORDS:
        raise LimitExceededError(f"'words' has {len(words)} entries; the limit is {MAX_WORDS}")
    return WordTimings(request_id=request_id, words=tuple(_word(item) for item in words), index=_index(obj))


def parse_played_ms(obj: Mapping[str, Any]) -> int | None:
    """The optional ``played_ms`` of a cancel: a whole number of milliseconds, 0..MAX_PLAYED_MS, or None."""
    value = obj.get(PLAYED_MS_FIELD)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidFieldError(f"'{PLAYED_MS_FIELD}' must be a number of milliseconds")
    if not 0 <= value <= MAX_PLAYED_MS:
        raise InvalidFieldError(f"'{PLAYED_MS_FIELD}' must be from 0 to {MAX_PLAYED_MS}; got {value!r}")
    return round(value)


def words_heard(words: Sequence[WordTiming], played_s: float) -> int:
    """How many of ``words`` (in spoken order) the listener heard after ``played_s`` seconds of playback: a word
    counts once playback has passed its midpoint."""
    heard = 0
    for word in words:
        if word.midpoint_s > played_s:
            break
        heard += 1
    return heard


def heard_prefix(text: str, words: Sequence[WordTiming], played_s: float) -> str:
    """``text`` up to the end of the last word heard after ``played_s`` seconds (``""`` when none was).

    ``words`` are the timings of ``text``'s speech, in order; each is looked up in ``text`` after the previous
    one, so the cut lands on the written text even if the speech engine split or spaced it differently (a word
    that cannot be found there is skipped). Text that was never spoken is never part of the prefix."""
    position = 0
    cut = 0
    for word in words[: words_heard(words, played_s)]:
        found = text.find(word.word, position)
        if found < 0:
            continue
        position = cut = found + len(word.word)
    return text[:cut]


def interrupted(text: str) -> str:
    """How a reply cut at a barge-in is kept in conversation history: the heard part, then ``… [interrupted]``."""
    heard = text.rstrip()
    return f"{heard}… {INTERRUPTED_MARK}" if heard else INTERRUPTED_MARK


__all__ = [
    "CAPTIONED_SPEECH_PATH",
    "INTERRUPTED_MARK",
    "MAX_PLAYED_MS",
    "MAX_WORDS",
    "MAX_WORD_CHARS",
    "PLAYED_MS_FIELD",
    "TIMINGS_FIELD",
    "WORD_TIMINGS_TYPE",
    "CaptionedSpeech",
    "WordTiming",
    "WordTimings",
    "heard_prefix",
    "interrupted",
    "parse_captioned_speech",
    "parse_played_ms",
    "parse_timings_flag",
    "parse_word_timings",
    "serialize_word_timings",
    "split_words",
    "words_heard",
]
