"""Property tests of relay_core.text.segmenter: no text lost, chunking never matters, pieces bounded."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from relay_core.text.boundaries import MAX_PHRASE_WORD_CHARS
from relay_core.text.segmenter import SentenceSegmenter, split_sentences, split_to_fit

WORDS = ["hello", "World", "the", "agent", "speaks", "Then", "it", "Kokoro", "voice", "a", "I", "x"]
WORDS += ["and", "for", "because", "android", "(to", "throughout", "throughoutness"]  # phrase starters, or nearly
ABBREVIATIONS = ["Mr.", "Mrs.", "Dr.", "St.", "e.g.", "i.e.", "etc.", "U.S.", "vs.", "a.m.", "p.m.", "Inc.", "Jr."]
NUMBERS = ["3.14", "v1.2.3", "10.5%", "1.", "2)", "42", "1,000", "10:30", "2010–2020"]
LINKS = ["https://example.com/a.b?x=1", "john.doe@mail.co.uk", "example.com.", "http://a.io/x,y"]
PUNCTUATION = [".", "!", "?", "?!", "!!", "...", "…", ",", ";", ":", " — ", "—", " - ", "-", "(", ")"]
QUOTES = ['"', "'", "“", "”", "’", "«", "»", "「", "」"]
SPACES = [" ", " ", " ", "  ", "\n", "\n\n", " \n ", "\t", "\r\n"]
CJK = ["你好", "世界", "。", "！", "？", "、", "，", "日本語", "です"]
MARKUP = ["**", "_", "`", "## ", "> ", "؟", "।"]

TOKEN = st.one_of(
    st.sampled_from(WORDS),
    st.sampled_from(ABBREVIATIONS),
    st.sampled_from(NUMBERS),
    st.sampled_from(LINKS),
    st.sampled_from(PUNCTUATION),
    st.sampled_from(QUOTES),
    st.sampled_from(SPACES),
    st.sampled_from(CJK),
    st.sampled_from(MARKUP),
    st.sampled_from(["A.", "J.", "R.", "- ", "* ", "• ", "12. "]),
)
# A token is mostly followed by a separator, so tokens meet whitespace (and newlines) as often as each other.
PART = st.tuples(TOKEN, st.one_of(st.just(""), st.sampled_from(SPACES), st.sampled_from(SPACES))).map("".join)
TEXT = st.lists(PART, max_size=40).map("".join)


def squash(text: str) -> str:
    """The text with all whitespace removed (pieces are stripped, so only this is comparable)."""
    return "".join(ch for ch in text if not ch.isspace())


def run(text: str, cuts: list[int], *, max_chars: int, first_fragment_words: int | None) -> list[str]:
    """Feed ``text`` cut at ``cuts`` into a fresh segmenter, then flush; return every piece."""
    segmenter = SentenceSegmenter(max_chars=max_chars, first_fragment_words=first_fragment_words)
    pieces: list[str] = []
    previous = 0
    for cut in [*sorted(cuts), len(text)]:
        pieces.extend(segmenter.feed(text[previous:cut]))
        previous = cut
    pieces.extend(segmenter.flush())
    assert segmenter.pending == ""
    return pieces


@st.composite
def chunked(draw: st.DrawFn) -> tuple[str, list[int], int, int | None]:
    text = draw(TEXT)
    cuts = draw(st.lists(st.integers(min_value=0, max_value=len(text)), max_size=20))
    max_chars = draw(st.sampled_from([1, 5, 17, 40, 300]))
    first = draw(st.sampled_from([None, None, 1, 3]))
    return text, cuts, max_chars, first


@settings(max_examples=200, deadline=None)
@given(chunked())
def test_chunking_never_changes_the_pieces(case: tuple[str, list[int], int, int | None]) -> None:
    text, cuts, max_chars, first = case
    whole = run(text, [], max_chars=max_chars, first_fragment_words=first)
    by_chunks = run(text, cuts, max_chars=max_chars, first_fragment_words=first)
    by_chars = run(text, list(range(len(text))), max_chars=max_chars, first_fragment_words=first)
    assert by_chunks == whole
    assert by_chars == whole


@settings(max_examples=200, deadline=None)
@given(chunked())
def test_no_text_lost_or_duplicated_and_pieces_bounded(case: tuple[str, list[int], int, int | None]) -> None:
    text, cuts, max_chars, first = case
    pieces = run(text, cuts, max_chars=max_chars, first_fragment_words=first)
    assert "".join(map(squash, pieces)) == squash(text)
    for piece in pieces:
        assert piece
        assert piece == piece.strip()
        assert len(piece) <= max_chars


@settings(max_examples=200, deadline=None)
@given(TEXT, st.sampled_from([1, 8, 40, 300]))
def test_split_sentences_is_feed_then_flush(text: str, max_chars: int) -> None:
    assert split_sentences(text, max_chars=max_chars) == run(text, [], max_chars=max_chars, first_fragment_words=None)


@settings(max_examples=200, deadline=None)
@given(TEXT, st.integers(min_value=1, max_value=30))
def test_split_to_fit_pieces_fit_and_join_back(text: str, limit: int) -> None:
    calls: list[str] = []

    def fits(piece: str) -> bool:
        calls.append(piece)
        return len(piece) <= limit

    pieces = split_to_fit(text, fits)
    assert "".join(map(squash, pieces)) == squash(text)
    for piece in pieces:
        assert piece
        assert piece == piece.strip()
        assert fits(piece)
    assert all(piece for piece in calls)


@settings(max_examples=100, deadline=None)
@given(TEXT)
def test_split_to_fit_with_a_non_length_measure(text: str) -> None:
    # Words count like a phoneme-token budget: a measure that is not the character length.
    def fits(piece: str) -> bool:
        return len(piece.split()) <= 3 and len(piece) <= 12

    pieces = split_to_fit(text, fits)
    assert "".join(map(squash, pieces)) == squash(text)
    assert all(fits(piece) for piece in pieces)


@settings(max_examples=200, deadline=None)
@given(chunked())
@example((">  \n hellohello.", [], 1, 1)).via(
    "found by hypothesis: whitespace runs between the first word and the next"
)
def test_pending_holds_exactly_what_was_not_emitted(case: tuple[str, list[int], int, int | None]) -> None:
    text, cuts, max_chars, first = case
    segmenter = SentenceSegmenter(max_chars=max_chars, first_fragment_words=first)
    emitted: list[str] = []
    previous = 0
    for cut in [*sorted(cuts), len(text)]:
        emitted.extend(segmenter.feed(text[previous:cut]))
        previous = cut
        assert "".join(map(squash, emitted)) + squash(segmenter.pending) == squash(text[:cut])
        # only the undecided end stays buffered: at most max_chars, plus the few characters that decide
        # it (whitespace, markdown emphasis, a list marker such as "\n123. " or "\n###### ", or, for a first
        # fragment, the next word up to MAX_PHRASE_WORD_CHARS: is it a phrase starter?). A run of whitespace counts
        # as one character: it is spoken as one space, and the input may hold runs of any length between two words.
        undecided = " ".join(segmenter.pending.rstrip().rstrip("*_`~").split())
        assert len(undecided) <= max_chars + (8 if first is None else 2 + MAX_PHRASE_WORD_CHARS)


PLAIN_WORDS = ["hello", "World", "agent", "speaks", "Kokoro", "voice", "3.14", "example.com"]
PLAIN_SENTENCE = st.tuples(
    st.lists(st.sampled_from([*PLAIN_WORDS, "well,", "so;", "note:", "—"]), min_size=1, max_size=8),
    st.sampled_from(PLAIN_WORDS),
    st.sampled_from([".", "!", "?", "?!", "。"]),
    st.sampled_from([" ", "\n", "\n\n"]),
).map(lambda parts: " ".join([*parts[0], parts[1]]) + parts[2] + parts[3])


@settings(max_examples=200, deadline=None)
@given(st.lists(PLAIN_SENTENCE, min_size=1, max_size=6))
def test_plain_sentences_are_emitted_without_waiting_for_the_next_word(sentences: list[str]) -> None:
    segmenter = SentenceSegmenter()
    emitted = [piece for sentence in sentences for piece in segmenter.feed(sentence)]
    assert emitted == [sentence.strip() for sentence in sentences]
    assert segmenter.pending == ""
