"""Where pieces of text may end: the boundary decisions behind :mod:`relay_core.text.segmenter`.

Each ``decide_*`` function looks at one candidate position of a buffer and answers YES, NO, or WAIT when
the characters that decide it have not arrived yet. A decision reads only the characters up to the point
it needs, never the buffer's length otherwise; that is what makes the segmenter's output independent of
how the text was chunked. The rules themselves are documented in :mod:`relay_core.text.segmenter`.
"""

from __future__ import annotations

import re
from enum import Enum

__all__ = [
    "CLAUSE_STARTERS",
    "PHRASE_STARTERS",
    "TERMINATORS",
    "Verdict",
    "clause_ends",
    "decide_clause",
    "decide_cluster",
    "decide_phrase",
    "decide_whitespace",
    "force_cut",
    "is_clause_mark",
    "word_ends",
]

_CJK_TERMINATORS = frozenset("。！？｡")
_STRONG_TERMINATORS = frozenset("!?！？‼⁇⁈⁉؟۔।॥։።")
TERMINATORS = frozenset(".…") | _CJK_TERMINATORS | _STRONG_TERMINATORS
_CLOSERS = frozenset("\"'”’»›)]}」』）】〕〉》")
_MARKUP = frozenset("*_`~")  # markdown emphasis around a sentence: transparent
_OPENERS = frozenset("\"'“‘«‹([{「『（【〔〈《¿¡")
_CLAUSE_MARKS = frozenset(",;:")
_CJK_CLAUSE_MARKS = frozenset("、，；：")
_EM_DASHES = frozenset("—―")
_SPACED_DASHES = frozenset("-–")
_DASHES = _EM_DASHES | _SPACED_DASHES
_BULLETS = frozenset("-*•·–—>#")
_NEWLINES = {"\n": 1, "\u2028": 1, "\u2029": 2}  # "\r\n" counts once, through its "\n"

# Abbreviations are matched lower-cased, without their final dot.
_NEVER_END = frozenset(
    {
        "mr", "mrs", "ms", "mx", "dr", "prof", "rev", "hon", "gen", "col", "capt", "lt", "sgt", "cpt",
        "st", "mt", "ft", "vs", "e.g", "i.e", "cf", "viz", "messrs",
    }
)  # fmt: skip
_MAYBE_END = frozenset(
    {
        "etc", "inc", "ltd", "co", "corp", "llc", "plc", "jr", "sr", "bros", "esq", "ph.d", "no", "nos",
        "fig", "figs", "approx", "dept", "est", "vol", "pp", "ca", "al", "jan", "feb", "apr", "jun",
        "jul", "aug", "sep", "sept", "oct", "nov", "dec",
    }
)  # fmt: skip
_DOTTED_ACRONYM = re.compile(r"(?:[^\W\d_]\.)+[^\W\d_]")


class Verdict(Enum):
    """Whether a candidate position ends a piece, given the text seen so far."""

    YES = "yes"
    NO = "no"
    WAIT = "wait"  # the deciding characters have not arrived yet


class _Word(Enum):
    """How the word before a single '.' affects the sentence end."""

    PLAIN = "plain"  # ends the sentence on the following whitespace
    NEVER = "never"  # titles, prefix abbreviations, initials, list markers
    MAYBE = "maybe"  # suffix abbreviations, acronyms: ends before a capitalised word or a newline


def _starts_sentence(ch: str) -> bool:
    """True when ``ch`` can open a sentence: an upper-case or uncased letter, or an opening quote."""
    return ch in _OPENERS or (ch.isalpha() and not ch.islower())


def _classify_word(buf: str, dot: int) -> _Word:
    """Classify the word that ends right before the '.' at ``buf[dot]``."""
    start = dot
    while start > 0 and (buf[start - 1].isalnum() or buf[start - 1] == "."):
        start -= 1
    word = buf[start:dot].strip(".")
    if not word:
        return _Word.PLAIN
    lower = word.lower()
    if len(word) == 1 and word.isalpha():
        return _Word.NEVER
    if word.isdecimal() and not any(c.isalnum() for c in buf[:start]):
        return _Word.NEVER
    if lower in _NEVER_END:
        return _Word.NEVER
    if lower in _MAYBE_END or _DOTTED_ACRONYM.fullmatch(lower):
        return _Word.MAYBE
    return _Word.PLAIN


def decide_cluster(buf: str, i: int) -> tuple[Verdict, int]:
    """Decide the terminator cluster starting at ``buf[i]``; return the verdict and the cluster's end."""
    n = len(buf)
    j = i
    while j < n and buf[j] in TERMINATORS:
        j += 1
    marks = buf[i:j]
    closed = False
    while j < n and (buf[j] in _CLOSERS or buf[j] in _MARKUP):
        closed = closed or buf[j] in _CLOSERS
        j += 1
    if j == n:
        return Verdict.WAIT, j
    if any(c in _CJK_TERMINATORS for c in marks):
        return Verdict.YES, j
    if not buf[j].isspace():
        return Verdict.NO, j
    if closed:
        kind = _Word.MAYBE  # a quotation may go on with the sentence: "Why?" she asked.
    elif any(c in _STRONG_TERMINATORS for c in marks):
        return Verdict.YES, j
    elif len(marks) > 1 or "…" in marks:
        kind = _Word.MAYBE  # an ellipsis
    else:
        kind = _classify_word(buf, i)
    if kind is _Word.PLAIN:
        return Verdict.YES, j
    if kind is _Word.NEVER:
        return Verdict.NO, j
    k = j
    while k < n and buf[k].isspace():
        if buf[k] in _NEWLINES:
            return Verdict.YES, j
        k += 1
    while k < n and buf[k] in _MARKUP:
        k += 1
    if k == n:
        return Verdict.WAIT, j
    return (Verdict.YES if _starts_sentence(buf[k]) else Verdict.NO), j


def decide_whitespace(buf: str, i: int) -> tuple[Verdict, int]:
    """Decide the whitespace run at ``buf[i]``: a blank line ends a piece; return verdict and run end."""
    n = len(buf)
    newlines = 0
    k = i
    while k < n and buf[k].isspace():
        newlines += _NEWLINES.get(buf[k], 0)
        if newlines >= 2:
            return Verdict.YES, k
        k += 1
    if k == n:
        return Verdict.WAIT, k
    if newlines == 1:
        return _list_item(buf, k), k
    return Verdict.NO, k


def _list_item(buf: str, k: int) -> Verdict:
    """YES when a list item or heading marker (``- `` ``• `` ``12. `` ``3) `` ``## `` ``> ``) is at ``buf[k]``.

    Markers are short (at most three digits, six ``#``), so the decision never waits for long.
    """
    n = len(buf)
    m = k
    if buf[k] in _BULLETS:
        m = k + 1
        while buf[k] == "#" and m < n and buf[m] == "#" and m - k < 6:
            m += 1
    else:
        while m < n and buf[m].isdecimal() and m - k < 3:
            m += 1
        if m == k or (m < n and buf[m] not in ".)"):
            return Verdict.NO
        m += 1
    if m >= n:
        return Verdict.WAIT
    return Verdict.YES if buf[m].isspace() else Verdict.NO


def decide_clause(buf: str, i: int) -> tuple[Verdict, int]:
    """Decide whether a clause ends after the mark at ``buf[i]``; return verdict and the clause's end."""
    n = len(buf)
    ch = buf[i]
    if ch in _CJK_CLAUSE_MARKS:
        return Verdict.YES, i + 1
    if ch in _CLAUSE_MARKS:
        if i + 1 == n:
            return Verdict.WAIT, n
        return (Verdict.YES if buf[i + 1].isspace() else Verdict.NO), i + 1
    if ch in _DASHES:
        spaced = ch in _SPACED_DASHES
        if spaced and (i == 0 or not buf[i - 1].isspace()):
            return Verdict.NO, i + 1
        j = i
        while j < n and buf[j] in _DASHES:
            j += 1
        if j == n:
            return Verdict.WAIT, j
        return (Verdict.YES if not spaced or buf[j].isspace() else Verdict.NO), j
    return Verdict.NO, i + 1


# Words a phrase may start with (English). The first fragment may end right before one of them
# (relay_core.text.segmenter).
CLAUSE_STARTERS = frozenset(
    {
        "and", "but", "or", "nor", "so", "yet", "because", "although", "though", "while", "whereas", "unless",
        "if", "when", "whenever", "where", "wherever", "which", "who", "whom", "whose", "then",
    }
)  # fmt: skip
"""Words that open a new clause (conjunctions, subordinators, relative pronouns): a first fragment may end before
one as soon as it holds its minimum of words. The voice's fall before them sounds like a speaker's pause."""
PHRASE_STARTERS = CLAUSE_STARTERS | frozenset(
    {
        "until", "since", "after", "before", "as", "than", "that", "to", "for", "with", "without", "from", "into",
        "onto", "about", "above", "across", "against", "along", "among", "around", "at", "behind", "below",
        "beneath", "beside", "between", "beyond", "by", "during", "except", "in", "inside", "near", "on", "over",
        "through", "throughout", "toward", "towards", "under", "upon", "via", "within",
    }
)  # fmt: skip
"""Every word a first fragment may end before: :data:`CLAUSE_STARTERS` and the prepositions (and the words that are
prepositions as often as conjunctions). Measured with Whisper (docs/benchmarks.md §9), a cut before a preposition
is heard as a sentence end far more often ("The train that leaves | at 7:45"), so these end a fragment only once
it is twice as long. ``of`` is never a boundary ("200 grams | of flour")."""
# Words after which a phrase does not end ("because | of", "the | with"): determiners and the starters themselves.
_NO_PHRASE_END = PHRASE_STARTERS | frozenset(
    {"a", "an", "the", "this", "these", "those", "my", "your", "our", "their", "his", "her", "its", "some", "any",
     "no", "every", "each", "all", "not", "is", "are", "was", "were", "be", "been", "am", "will", "would", "can",
     "could", "should", "shall", "may", "might", "must", "do", "does", "did", "have", "has", "had", "i", "of"}
)  # fmt: skip
_WORD_PUNCTUATION = "\"'“”‘’«»()[]{}*_`~,;:.!?…"
MAX_PHRASE_WORD_CHARS = 12
"""A next word longer than this (as written) is no phrase starter: the decision never waits for more of it."""


def decide_phrase(
    buf: str, i: int, k: int, *, min_words: int, max_words: int, preposition_words: int | None = None
) -> Verdict:
    """Decide whether a first fragment ends at the whitespace ``buf[i:k]`` at a phrase boundary.

    YES once the text before holds ``max_words`` words (the hard cap), or when its last word can end a phrase and
    the next word (which must have arrived whole: WAIT until the whitespace after it) is in
    :data:`CLAUSE_STARTERS` with at least ``min_words`` words before, or in the rest of :data:`PHRASE_STARTERS`
    with at least ``preposition_words`` before (default ``min_words``). Reads only ``buf`` up to the end of the
    next word, and at most :data:`MAX_PHRASE_WORD_CHARS` + 1 characters of it.
    """
    before = buf[:i].split()
    if len(before) >= max_words:
        return Verdict.YES
    if len(before) < min_words:
        return Verdict.NO
    n = len(buf)
    m = k
    while m < n and not buf[m].isspace() and m - k <= MAX_PHRASE_WORD_CHARS:
        m += 1
    if m - k > MAX_PHRASE_WORD_CHARS:
        return Verdict.NO
    if m == n:
        return Verdict.WAIT
    word = buf[k:m].strip(_WORD_PUNCTUATION).lower()
    last = before[-1].strip(_WORD_PUNCTUATION).lower()
    if last in _NO_PHRASE_END or not any(c.isalnum() for c in last):
        return Verdict.NO
    if word in CLAUSE_STARTERS:
        return Verdict.YES
    if word in PHRASE_STARTERS and len(before) >= (preposition_words or min_words):
        return Verdict.YES
    return Verdict.NO


def is_clause_mark(ch: str) -> bool:
    return ch in _CLAUSE_MARKS or ch in _CJK_CLAUSE_MARKS or ch in _DASHES


def force_cut(buf: str, limit: int) -> int:
    """Where to cut ``buf`` (longer than ``limit``) so the first piece has at most ``limit`` characters.

    Reads only ``buf[: limit + 1]``, so the answer does not depend on how much text has arrived beyond it.
    """
    window = buf[: limit + 1]
    best = 0
    i = 0
    while i < limit:
        if is_clause_mark(window[i]):
            verdict, end = decide_clause(window, i)
            if verdict is Verdict.YES and end <= limit:
                best = end
            i = max(end, i + 1)
        else:
            i += 1
    if best:
        return best
    for c in range(limit, 0, -1):
        if window[c].isspace() and not window[c - 1].isspace():
            return c
    return limit


def clause_ends(text: str) -> list[int]:
    """Every index of ``text`` a clause ends at (just after its mark)."""
    ends: list[int] = []
    i = 0
    while i < len(text):
        if is_clause_mark(text[i]):
            verdict, end = decide_clause(text, i)
            if verdict is Verdict.YES:
                ends.append(end)
            i = max(end, i + 1)
        else:
            i += 1
    return ends


def word_ends(text: str) -> list[int]:
    """Every index of ``text`` a word ends at (whitespace follows)."""
    return [k for k in range(1, len(text)) if text[k].isspace() and not text[k - 1].isspace()]
