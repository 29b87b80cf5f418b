"""Table tests of relay_core.text.segmenter: where sentences end, when they are emitted, how long text is cut."""

from __future__ import annotations

import pytest

from relay_core.text.segmenter import SentenceSegmenter, first_fragment, split_sentences, split_to_fit


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello world. How are you? I am fine!", ["Hello world.", "How are you?", "I am fine!"]),
        # titles and prefix abbreviations never end a sentence
        ("Mr. Smith met Mrs. Jones. Then they left.", ["Mr. Smith met Mrs. Jones.", "Then they left."]),
        ("Dr. Who lives on St. James St. in town.", ["Dr. Who lives on St. James St. in town."]),
        ("Use a tool, e.g. a hammer, i.e. this one. Done.", ["Use a tool, e.g. a hammer, i.e. this one.", "Done."]),
        ("It was Kramer vs. Kramer. Good film.", ["It was Kramer vs. Kramer.", "Good film."]),
        # initials
        ("J. R. R. Tolkien wrote it. The end.", ["J. R. R. Tolkien wrote it.", "The end."]),
        ("The case Roe v. Wade matters.", ["The case Roe v. Wade matters."]),
        # a documented limit: a single letter is taken for an initial
        ("We chose Plan B. Then we left.", ["We chose Plan B. Then we left."]),
        # suffix abbreviations end a sentence only before a capitalised word
        ("Apples, pears, etc. Then more.", ["Apples, pears, etc.", "Then more."]),
        ("Apples, pears, etc. are fruit.", ["Apples, pears, etc. are fruit."]),
        ("She works at Acme Inc. The pay is good.", ["She works at Acme Inc.", "The pay is good."]),
        ("Acme Inc. employees are happy.", ["Acme Inc. employees are happy."]),
        ("Martin Luther King Jr. was born in 1929.", ["Martin Luther King Jr. was born in 1929."]),
        ("We met at 5 p.m. and talked. It was late.", ["We met at 5 p.m. and talked.", "It was late."]),
        ("We met at 9 a.m. Then we ate.", ["We met at 9 a.m.", "Then we ate."]),
        ("He lives in the U.S. The weather is fine.", ["He lives in the U.S.", "The weather is fine."]),
        ("The U.S. economy grew.", ["The U.S. economy grew."]),
        ("See No. 5 and Fig. 3 for details.", ["See No. 5 and Fig. 3 for details."]),
        # decimals, versions, percentages
        ("Pi is 3.14 today. Tomorrow too.", ["Pi is 3.14 today.", "Tomorrow too."]),
        ("Install v1.2.3 now. It costs 10.5% more.", ["Install v1.2.3 now.", "It costs 10.5% more."]),
        ("The year was 1999. Then came 2000.", ["The year was 1999.", "Then came 2000."]),
        # ellipses
        ("Wait... What happened?", ["Wait...", "What happened?"]),
        ("Well... maybe not.", ["Well... maybe not."]),
        ("Wait… Who is it?", ["Wait…", "Who is it?"]),
        ("Hmm… yes.", ["Hmm… yes."]),
        ("Wait...what?", ["Wait...what?"]),
        # closing quotes and brackets stay with their sentence
        ('He said "Hi." Then he left.', ['He said "Hi."', "Then he left."]),
        ("She said 'no!' and left. Bye.", ["She said 'no!' and left.", "Bye."]),
        ('"Really?" she asked. "Yes!" He nodded.', ['"Really?" she asked.', '"Yes!"', "He nodded."]),
        ("It ended (finally.) Good.", ["It ended (finally.)", "Good."]),
        ("«C'est fini.» Oui.", ["«C'est fini.»", "Oui."]),
        ('He said. "Then what?"', ["He said.", '"Then what?"']),
        # multiple terminators
        ("Really?! Yes!! Okay?? Fine.", ["Really?!", "Yes!!", "Okay??", "Fine."]),
        # newlines
        ("Title\n\nBody text here", ["Title", "Body text here"]),
        ("A line\nthat wraps here. Next.", ["A line\nthat wraps here.", "Next."]),
        ("Done.\nnext line", ["Done.", "next line"]),
        ("Apples etc.\nmore", ["Apples etc.", "more"]),
        ("Wait...\nwhat", ["Wait...", "what"]),
        ("Steps:\n1. Buy milk\n2. Drink it.", ["Steps:", "1. Buy milk", "2. Drink it."]),
        ("Items:\n- one\n* two\n• three", ["Items:", "- one", "* two", "• three"]),
        ("Total\n1234. Done", ["Total\n1234.", "Done"]),
        ("Para one\r\n\r\nPara two", ["Para one", "Para two"]),
        ("Line one\u2029Line two", ["Line one", "Line two"]),
        (
            "Notes\n## Heading\n> quoted\nplain #tag\n-5 degrees",
            ["Notes", "## Heading", "> quoted\nplain #tag\n-5 degrees"],
        ),
        # markdown emphasis around a sentence is transparent
        ("**Hello.** Next one. *Etc.* _Then_ more.", ["**Hello.**", "Next one.", "*Etc.*", "_Then_ more."]),
        ("Apples etc. **Then** more.", ["Apples etc.", "**Then** more."]),
        # other scripts
        ("ما اسمك؟ أنا بخير.", ["ما اسمك؟", "أنا بخير."]),
        ("यह ठीक है। अगला वाक्य।", ["यह ठीक है।", "अगला वाक्य।"]),
        # CJK terminators need no space
        ("你好。世界！好吗？", ["你好。", "世界！", "好吗？"]),
        ("「こんにちは。」次です。", ["「こんにちは。」", "次です。"]),
        ("Hello。World", ["Hello。", "World"]),
        # URLs and e-mail addresses
        (
            "Visit https://example.com/a.b?x=1 now. Then mail john.doe@mail.co.uk. Thanks!",
            ["Visit https://example.com/a.b?x=1 now.", "Then mail john.doe@mail.co.uk.", "Thanks!"],
        ),
        ("Go to example.com. It works.", ["Go to example.com.", "It works."]),
        # pieces without letters or digits join the next sentence
        ("!!! Hello there.", ["!!! Hello there."]),
        # nothing at all
        ("", []),
        ("   \n\n  ", []),
        ("No terminator at the end", ["No terminator at the end"]),
    ],
)
def test_sentence_boundaries(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def feed_chars(segmenter: SentenceSegmenter, text: str) -> list[tuple[int, list[str]]]:
    """Feed one character at a time; return (index of the character, pieces) for each emitting call."""
    emitted: list[tuple[int, list[str]]] = []
    for index, char in enumerate(text):
        pieces = segmenter.feed(char)
        if pieces:
            emitted.append((index, pieces))
    return emitted


@pytest.mark.parametrize(
    ("text", "emitted_at"),
    [
        # a plain word: emitted on the whitespace after the terminator, no need to see the next word
        ("Hello world. Next", 12),
        ("Really? Yes", 7),
        ("Hi!\nthere", 3),
        # a CJK terminator: emitted on the next character, whatever it is
        ("你好。世界", 3),
        # a closing quote might follow, and a quotation may go on: wait for the next word
        ('He said "Hi." Then', 14),
        # a suffix abbreviation, an acronym or an ellipsis: wait for the next word's first character
        ("Apples etc. Then", 12),
        ("In the U.S. The", 12),
        ("Wait... What", 8),
        ("Wait...  \nwhat", 9),
        # a blank line: emitted on the second newline
        ("Title\n\nBody", 6),
    ],
)
def test_streaming_emits_as_soon_as_decided(text: str, emitted_at: int) -> None:
    segmenter = SentenceSegmenter()
    emitted = feed_chars(segmenter, text)
    assert emitted[0][0] == emitted_at
    assert len(emitted) == 1


@pytest.mark.parametrize(
    "prefix",
    [
        "Pi is 3.",
        "Use it e.",
        "Use it e.g",
        "Wait..",
        "Wait...",
        'He said "Hi.',
        'He said "Hi." ',
        "Apples etc. ",
        "Title\n",
        "Dr.",
        "你好。",
        "List\n1",
        "List\n1.",
        "Yes, ",
    ],
)
def test_streaming_waits_while_the_next_character_could_change_the_decision(prefix: str) -> None:
    segmenter = SentenceSegmenter()
    assert segmenter.feed(prefix) == []
    assert segmenter.pending == prefix


@pytest.mark.parametrize(
    ("prefix", "rest", "expected"),
    [
        ("Pi is 3.", "14 exactly. ", ["Pi is 3.14 exactly."]),
        ("Use it e.g", ". this one. ", ["Use it e.g. this one."]),
        ("Wait..", ". What", ["Wait..."]),
        ('He said "Hi.', '" Then', ['He said "Hi."']),
        ("Apples etc. ", "are good. ", ["Apples etc. are good."]),
    ],
)
def test_streaming_decides_once_the_next_character_arrives(prefix: str, rest: str, expected: list[str]) -> None:
    segmenter = SentenceSegmenter()
    assert segmenter.feed(prefix) == []
    assert segmenter.feed(rest) == expected


def test_flush_returns_the_tail_and_resets() -> None:
    segmenter = SentenceSegmenter(first_fragment_words=2)
    assert segmenter.feed("One two, three. Four") == ["One two,", "three."]
    assert segmenter.pending == "Four"
    assert segmenter.flush() == ["Four"]
    assert segmenter.pending == ""
    assert segmenter.flush() == []
    # the first-fragment policy applies again after a flush
    assert segmenter.feed("Five six, seven. ") == ["Five six,", "seven."]


def test_pending_drops_leading_whitespace() -> None:
    segmenter = SentenceSegmenter()
    assert segmenter.feed("  \n ") == []
    assert segmenter.pending == ""
    assert segmenter.feed("Hi. There") == ["Hi."]
    assert segmenter.pending == "There"


@pytest.mark.parametrize(
    ("text", "words", "expected"),
    [
        # the first clause goes early once it holds enough words; later ones wait for the sentence end
        (
            "Well, I think that, honestly, it is fine. And then, more.",
            4,
            ["Well, I think that,", "honestly, it is fine.", "And then, more."],
        ),
        ("Sure; let me check that for you. Done.", 1, ["Sure;", "let me check that for you.", "Done."]),
        ("Note: the file is ready. Ok.", 1, ["Note:", "the file is ready.", "Ok."]),
        ("I think — honestly — yes. Ok.", 2, ["I think —", "honestly — yes.", "Ok."]),
        ("Quite so—indeed. Ok.", 2, ["Quite so—", "indeed.", "Ok."]),
        # not enough words before any clause mark: the first sentence is emitted whole
        ("Yes, sure. Next, one.", 3, ["Yes, sure.", "Next, one."]),
        # marks that are not clause ends: numbers, times, hyphenated words, ranges
        ("Buy 1,000 apples 10:30 sharp, well-known 2010–2020 fans. Ok.", 5, [
            "Buy 1,000 apples 10:30 sharp,", "well-known 2010–2020 fans.", "Ok."]),
        # a sentence that ends before the first clause mark comes first
        ("Hi there. Well, then, go.", 1, ["Hi there.", "Well, then, go."]),
    ],
)  # fmt: skip
def test_first_fragment_policy(text: str, words: int, expected: list[str]) -> None:
    assert SentenceSegmenter(first_fragment_words=words).feed(text) == expected[:-1]
    segmenter = SentenceSegmenter(first_fragment_words=words)
    assert segmenter.feed(text) + segmenter.flush() == expected


@pytest.mark.parametrize(
    ("text", "words", "expected"),
    [
        # no clause mark early: cut before a conjunction once the fragment has enough words
        ("Your order left the warehouse this morning and should arrive by Thursday. Ok.", 4, [
            "Your order left the warehouse this morning", "and should arrive by Thursday.", "Ok."]),
        # before a preposition only at twice the minimum: not at 4 words with a minimum of 4, at 4 with 2
        ("I checked the calendar for next week. Ok.", 4, ["I checked the calendar for next week.", "Ok."]),
        ("I checked the calendar for next week. Ok.", 2, ["I checked the calendar", "for next week.", "Ok."]),
        ("There are three things you need before the appointment.", 4, [
            "There are three things you need before the appointment."]),
        ("There are three things you need before the appointment.", 3, [
            "There are three things you need", "before the appointment."]),
        # never after an article, an auxiliary or another phrase starter; never before "of"
        ("The flight was delayed because of fog at the airport.", 3, [
            "The flight was delayed", "because of fog at the airport."]),
        ("The recipe needs two hundred grams of flour and eggs.", 3, [
            "The recipe needs two hundred grams of flour", "and eggs."]),
        ("We will ship the parcel to you soon.", 2, ["We will ship the parcel", "to you soon."]),
        # a starter inside a longer word is no starter: "android", "inform"
        ("I set the android inform page now.", 3, ["I set the android inform page now."]),
        # a clause mark that comes first still wins
        ("Thanks for waiting, I found it in the list.", 2, ["Thanks for waiting,", "I found it in the list."]),
        # the hard cap: four times the minimum, when no boundary comes
        ("One two three four five six seven eight nine ten. Ok.", 2, [
            "One two three four five six seven eight", "nine ten.", "Ok."]),
        # a sentence shorter than the boundary is emitted whole
        ("Sure thing. And then, more.", 4, ["Sure thing.", "And then, more."]),
    ],
)  # fmt: skip
def test_first_fragment_cuts_at_a_phrase_boundary(text: str, words: int, expected: list[str]) -> None:
    segmenter = SentenceSegmenter(first_fragment_words=words)
    assert segmenter.feed(text) + segmenter.flush() == expected
    assert first_fragment(text, words=words)[0] == expected[0]


def test_first_fragment_waits_for_the_whole_next_word() -> None:
    segmenter = SentenceSegmenter(first_fragment_words=2)
    emitted = feed_chars(segmenter, "We left the house and went")
    # "and" is known to be a whole word only on the space after it (index 21)
    assert emitted == [(21, ["We left the house"])]


def test_first_fragment_max_words() -> None:
    segmenter = SentenceSegmenter(first_fragment_words=2, first_fragment_max_words=3)
    assert segmenter.feed("Eins zwei drei vier fünf. ") == ["Eins zwei drei", "vier fünf."]
    with pytest.raises(ValueError, match="first_fragment_max_words"):
        SentenceSegmenter(first_fragment_words=4, first_fragment_max_words=3)


def test_first_fragment_function_returns_the_rest_of_the_source() -> None:
    assert first_fragment("We left the house and went home.\n\nNext.", words=2) == (
        "We left the house",
        " and went home.\n\nNext.",
    )
    assert first_fragment("   ", words=2) == ("", "")


def test_first_fragment_is_emitted_on_the_whitespace_after_the_mark() -> None:
    segmenter = SentenceSegmenter(first_fragment_words=2)
    emitted = feed_chars(segmenter, "Sure thing, let me look")
    assert emitted == [(11, ["Sure thing,"])]


@pytest.mark.parametrize(
    ("text", "max_chars", "expected"),
    [
        # the last clause mark inside the limit
        ("one two, three four, five six seven", 22, ["one two, three four,", "five six seven"]),
        ("one two; three four five six seven", 20, ["one two;", "three four five six", "seven"]),
        ("alpha beta — gamma delta epsilon", 14, ["alpha beta —", "gamma delta", "epsilon"]),
        ("漢字漢字、漢字漢字漢字漢字漢字", 8, ["漢字漢字、", "漢字漢字漢字漢字", "漢字"]),
        # no clause mark: the last word boundary
        ("aaa bbb ccc ddd eee", 10, ["aaa bbb", "ccc ddd", "eee"]),
        ("aaa bbb ccc", 7, ["aaa bbb", "ccc"]),
        # one enormous word: exactly max_chars characters
        ("abcdefghij", 4, ["abcd", "efgh", "ij"]),
        ("https://example.com/a/b/c", 10, ["https://ex", "ample.com/", "a/b/c"]),
        # a sentence end within the limit still wins
        ("Short. Then a much longer tail here", 12, ["Short.", "Then a much", "longer tail", "here"]),
    ],
)
def test_force_split_over_max_chars(text: str, max_chars: int, expected: list[str]) -> None:
    assert split_sentences(text, max_chars=max_chars) == expected
    segmenter = SentenceSegmenter(max_chars=max_chars)
    streamed = [piece for char in text for piece in segmenter.feed(char)] + segmenter.flush()
    assert streamed == expected


def test_force_split_happens_while_streaming_not_only_at_flush() -> None:
    segmenter = SentenceSegmenter(max_chars=10)
    assert segmenter.feed("aaa bbb ccc ddd") == ["aaa bbb"]
    assert segmenter.pending == "ccc ddd"


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("short", 10, ["short"]),
        ("  padded  ", 10, ["padded"]),
        ("", 10, []),
        # clauses are packed greedily while they fit
        ("one, two, three, four", 10, ["one, two,", "three,", "four"]),
        ("one, two, three, four", 20, ["one, two, three,", "four"]),
        ("a; b: c — d", 5, ["a; b:", "c — d"]),
        ("a; b: c — d", 4, ["a;", "b:", "c —", "d"]),
        # a clause that does not fit alone is split at words
        ("one two three four, five", 10, ["one two", "three", "four, five"]),
        # the last clause mark within reach wins over a longer word cut
        ("one, two three four five", 20, ["one,", "two three four five"]),
        # a word that does not fit alone is split by characters
        ("tiny enormousword", 5, ["tiny", "enorm", "ouswo", "rd"]),
        ("日本語のテキスト、短い", 6, ["日本語のテキ", "スト、短い"]),
        ("日本語のテキスト、短い", 4, ["日本語の", "テキスト", "、短い"]),
    ],
)  # fmt: skip
def test_split_to_fit(text: str, limit: int, expected: list[str]) -> None:
    assert split_to_fit(text, lambda piece: len(piece) <= limit) == expected


def test_split_to_fit_raises_when_a_character_cannot_fit() -> None:
    with pytest.raises(ValueError, match="single character"):
        split_to_fit("abc", lambda piece: False)


@pytest.mark.parametrize("kwargs", [{"max_chars": 0}, {"first_fragment_words": 0}])
def test_invalid_settings_are_rejected(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="must be at least 1"):
        SentenceSegmenter(**kwargs)


def test_feed_rejects_bytes() -> None:
    with pytest.raises(TypeError, match="decode bytes"):
        SentenceSegmenter().feed(b"hello")  # type: ignore[arg-type]


def test_split_to_fit_calls_fits_a_logarithmic_number_of_times() -> None:
    calls: list[str] = []

    def fits(piece: str) -> bool:
        calls.append(piece)
        return len(piece) <= 500

    text = " ".join(f"w{k}" for k in range(2000))
    pieces = split_to_fit(text, fits)
    assert " ".join(pieces) == text
    assert all(len(piece) <= 500 for piece in pieces)
    assert all(len(piece) > 490 for piece in pieces[:-1])
    assert len(calls) <= 25 * len(pieces)
