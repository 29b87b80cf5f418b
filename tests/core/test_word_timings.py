"""relay_core.word_timings: written words, the message on every transport, and the barge-in rule."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from relay_core.errors import InvalidFieldError, LimitExceededError, ProtocolError
from relay_core.word_timings import (
    INTERRUPTED_MARK,
    MAX_WORDS,
    CaptionedSpeech,
    WordTiming,
    WordTimings,
    apply_word_timings,
    heard_prefix,
    interrupted,
    parse_captioned_speech,
    parse_played_ms,
    parse_timings_flag,
    parse_word_timings,
    serialize_word_timings,
    split_words,
    words_heard,
)


def _words(text: str) -> list[str]:
    return [text[start:end] for start, end in split_words(text)]


def test_written_words_keep_their_punctuation_and_numbers() -> None:
    assert _words("Hello, world!  It costs 1,234.50 dollars.") == [
        "Hello,",
        "world!",
        "It",
        "costs",
        "1,234.50",
        "dollars.",
    ]
    assert _words("Wait — what?") == ["Wait —", "what?"]
    assert _words("“Quoted” well-known U.S.A.") == ["“Quoted”", "well-known", "U.S.A."]
    assert _words("... so") == ["... so"]
    assert _words("?!") == ["?!"]
    assert _words("   ") == []


@given(st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=80))
def test_written_words_are_ordered_disjoint_and_cover_every_letter(text: str) -> None:
    spans = split_words(text)
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert end <= start
    covered = {i for start, end in spans for i in range(start, end)}
    assert all(i in covered for i, char in enumerate(text) if not char.isspace())


TIMINGS = WordTimings(
    request_id="r1",
    words=(WordTiming("Hello,", 0.0, 0.4), WordTiming("1,234", 0.5, 1.5), WordTiming("ünïcode.", 1.5, 2.0)),
)


def test_message_round_trips_and_has_the_documented_shape() -> None:
    wire = serialize_word_timings(TIMINGS)
    assert json.loads(wire) == {
        "type": "word_timings",
        "request_id": "r1",
        "words": [
            {"word": "Hello,", "start_s": 0.0, "end_s": 0.4},
            {"word": "1,234", "start_s": 0.5, "end_s": 1.5},
            {"word": "ünïcode.", "start_s": 1.5, "end_s": 2.0},
        ],
    }
    assert parse_word_timings(wire) == TIMINGS
    assert parse_word_timings(wire.encode()) == TIMINGS
    shifted = TIMINGS.shifted(2.5, request_id="turn-1")
    assert shifted.request_id == "turn-1"
    assert [(w.start_s, w.end_s) for w in shifted.words] == [(2.5, 2.9), (3.0, 4.0), (4.0, 4.5)]


@pytest.mark.parametrize(
    "obj",
    [
        {"type": "word_timings", "words": []},
        {"type": "word_timings", "request_id": "r", "words": {}},
        {"type": "word_timings", "request_id": "r", "words": [["a", 0, 1]]},
        {"type": "word_timings", "request_id": "r", "words": [{"word": "a", "start_s": 1, "end_s": 0.5}]},
        {"type": "word_timings", "request_id": "r", "words": [{"word": "a", "start_s": -1, "end_s": 0}]},
        {"type": "word_timings", "request_id": "r", "words": [{"word": "", "start_s": 0, "end_s": 0}]},
        {"type": "word_timings", "request_id": "r", "words": [{"word": "a", "start_s": True, "end_s": 1}]},
        {
            "type": "word_timings",
            "request_id": "r",
            "words": [{"word": "b", "start_s": 1, "end_s": 2}, {"word": "a", "start_s": 0, "end_s": 0.5}],
        },
        {"type": "audio_chunk", "request_id": "r", "words": []},
    ],
)
def test_bad_messages_raise_protocol_errors(obj: dict[str, object]) -> None:
    with pytest.raises(InvalidFieldError):
        parse_word_timings(obj)


def test_estimates_and_index_round_trip_and_only_appear_when_used() -> None:
    estimate = WordTiming("world.", 0.5, 0.9, final=False)
    message = WordTimings("r1", (WordTiming("Hello,", 0.0, 0.41), estimate), index=3)
    obj = json.loads(serialize_word_timings(message))
    assert obj == {
        "type": "word_timings",
        "request_id": "r1",
        "index": 3,
        "words": [
            {"word": "Hello,", "start_s": 0.0, "end_s": 0.41},
            {"word": "world.", "start_s": 0.5, "end_s": 0.9, "final": False},
        ],
    }
    assert parse_word_timings(obj) == message
    assert not message.final and WordTimings("r1", (WordTiming("a", 0, 1),)).final
    plain = json.loads(serialize_word_timings(WordTimings("r1", (WordTiming("a", 0, 1),))))
    assert "index" not in plain and "final" not in plain["words"][0], "the wire is unchanged where nothing is estimated"
    for bad in ({"index": -1}, {"index": 1.5}, {"index": True}, {"index": "2"}):
        with pytest.raises(InvalidFieldError):
            parse_word_timings({**obj, **bad})
    with pytest.raises(InvalidFieldError):
        parse_word_timings({**obj, "words": [{"word": "a", "start_s": 0, "end_s": 1, "final": "no"}]})


def test_a_message_with_an_index_replaces_the_words_held_from_there_on() -> None:
    held = [WordTiming("one", 0.0, 0.2)]
    apply_word_timings(
        held, WordTimings("r", (WordTiming("two", 0.3, 0.5, final=False), WordTiming("three", 0.6, 0.8, final=False)))
    )
    assert [w.word for w in held] == ["one", "two", "three"]
    apply_word_timings(
        held, WordTimings("r", (WordTiming("two", 0.28, 0.47), WordTiming("three", 0.6, 0.8, final=False)), index=1)
    )
    assert held[1] == WordTiming("two", 0.28, 0.47) and len(held) == 3
    apply_word_timings(held, WordTimings("r", (WordTiming("three", 0.58, 0.79),), index=2))
    assert all(w.final for w in held) and [w.word for w in held] == ["one", "two", "three"]
    apply_word_timings(held, WordTimings("r", (WordTiming("four", 1.0, 1.2),), index=9))
    assert len(held) == 4, "an index past the words held appends"


def test_shifting_onto_a_turn_moves_times_and_index() -> None:
    message = WordTimings("req-2", (WordTiming("two", 0.3, 0.5, final=False),), index=1)
    moved = message.shifted(2.0, request_id="turn", words_before=5)
    assert moved == WordTimings("turn", (WordTiming("two", 2.3, 2.5, final=False),), index=6)
    appended = WordTimings("req-2", (WordTiming("a", 0, 1),)).shifted(1.0, words_before=5)
    assert appended.index is None, "a message that appends still appends on the turn"


def test_too_many_words_is_a_limit() -> None:
    words = [{"word": "a", "start_s": i, "end_s": i} for i in range(MAX_WORDS + 1)]
    with pytest.raises(LimitExceededError):
        parse_word_timings({"type": "word_timings", "request_id": "r", "words": words})
    with pytest.raises(ProtocolError):
        parse_word_timings(b"{not json")


def test_played_ms_is_optional_and_checked() -> None:
    assert parse_played_ms({}) is None
    assert parse_played_ms({"played_ms": None}) is None
    assert parse_played_ms({"played_ms": 1234.4}) == 1234
    for bad in (-1, True, "12", float("nan"), 10**12):
        with pytest.raises(InvalidFieldError, match="played_ms"):
            parse_played_ms({"played_ms": bad})


def test_a_word_is_heard_once_playback_passes_its_midpoint() -> None:
    words = TIMINGS.words
    assert words_heard(words, 0.0) == 0
    assert words_heard(words, 0.2) == 1
    assert words_heard(words, 0.99) == 1
    assert words_heard(words, 1.0) == 2
    assert words_heard(words, 99) == 3


def test_reply_is_cut_after_the_last_word_heard() -> None:
    text = "Hello, 1,234 ünïcode."
    assert heard_prefix(text, TIMINGS.words, 0.1) == ""
    assert heard_prefix(text, TIMINGS.words, 0.3) == "Hello,"
    assert heard_prefix(text, TIMINGS.words, 1.2) == "Hello, 1,234"
    assert heard_prefix(text, TIMINGS.words, 2.0) == text
    assert heard_prefix(text + " Never spoken.", TIMINGS.words, 60.0) == text, "unspoken text is not heard"
    assert heard_prefix("Hello, 1,234 (typo).", TIMINGS.words, 60.0) == "Hello, 1,234", "missing words are skipped"
    assert interrupted("Hello, 1,234") == f"Hello, 1,234… {INTERRUPTED_MARK}"
    assert interrupted("") == INTERRUPTED_MARK


def test_captioned_answer_round_trips_and_the_timings_flag_is_a_boolean() -> None:
    answer = CaptionedSpeech(
        request_id="r1", format="wav", sample_rate=24_000, duration_s=2.0, audio="UklGRg==", words=TIMINGS.words
    )
    wire = json.dumps(answer.to_json())
    assert parse_captioned_speech(wire) == answer
    with pytest.raises(InvalidFieldError, match="sample_rate"):
        parse_captioned_speech({**answer.to_json(), "sample_rate": "24000"})
    assert parse_timings_flag({}) is False
    assert parse_timings_flag({"timings": True}) is True
    for bad in ("true", 1, None):
        with pytest.raises(InvalidFieldError, match="timings"):
            parse_timings_flag({"timings": bad})
