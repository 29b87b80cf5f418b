"""Incremental sentence segmentation: emit each complete sentence the moment it exists.

A voice agent streams LLM text deltas into :class:`SentenceSegmenter`; every call to
:meth:`~SentenceSegmenter.feed` returns the sentences that became complete, so text-to-speech can start on
the first sentence while the model is still writing the second. :func:`split_sentences` is the one-shot
form (the TTS engine uses it on long requests), and :func:`split_to_fit` cuts one over-long piece into
pieces a model accepts (for example, under its phoneme-token limit).

Guarantees
----------
* **Nothing is lost or duplicated.** Pieces are stripped of surrounding whitespace and never empty;
  joining them gives back every non-whitespace character of the input, in order.
* **Chunking never matters.** The pieces are a function of the whole text only: feeding it in one call,
  character by character, or in any other chunks (then :meth:`~SentenceSegmenter.flush`) yields the same
  list. A decision is only taken once the characters it depends on have arrived; until then the text
  stays in :attr:`~SentenceSegmenter.pending`.
* **Bounded pieces.** No piece is longer than ``max_chars`` characters.

Where a sentence ends
---------------------
A *terminator cluster* is a run of ``. ! ? …`` (and the CJK ``。 ！ ？ ｡``) followed by any closing quotes
or brackets (``" ' ” ’ » ) ] }`` and the CJK closers). The closers stay with the sentence they close:
``He said "Hi." Then`` gives ``He said "Hi."``.

1. **CJK terminators** end a sentence right after their cluster, with or without a space.
2. Other clusters end a sentence only when **whitespace** follows them; ``3.14``, ``v1.2.3``,
   ``10.5%``, ``https://example.com/a.b?x=1`` and ``john.doe@mail.co.uk`` therefore never split.
3. A cluster containing ``!`` or ``?`` (``?!``, ``!!``) ends the sentence as soon as the whitespace
   after it arrives, unless it ends in a closing quote or bracket (rule 5).
4. A single ``.`` looks at the word before it (letters, digits and dots back to the previous space or
   punctuation):

   * a **plain word** ends the sentence as soon as the whitespace arrives. This is the latency rule:
     ``"Hello world. "`` is emitted on the space, without waiting for the next word, because the agent
     feeds every token and the common case should not pay a token of delay;
   * a **title or prefix abbreviation** (``Mr. Mrs. Ms. Dr. Prof. St. Mt. vs. e.g. i.e. cf.`` ...) or a
     **single letter** (an initial: ``J. R. R. Tolkien``, or ``Roe v. Wade``) never ends a sentence;
   * a **suffix abbreviation** (``etc. Inc. Ltd. Co. Jr. Sr. a.m. p.m. No. Fig.``, months) or any
     **dotted acronym** (``U.S.``, ``U.S.A.``) ends the sentence only if the next word starts like a
     sentence (an upper-case or uncased letter, or an opening quote/bracket) or a newline follows: the
     segmenter waits for that next character;
   * a number alone at the start of a sentence (``1.``, a list marker) or a lone letter does not end it.

5. An **ellipsis** (``…`` or two or more dots) and any cluster that **ends in a closing quote or
   bracket** follow the suffix-abbreviation rule: they end the sentence when a newline follows or the
   next word is capitalised (``Wait... What?`` and ``He said "Hi." Then`` split; ``Well... maybe`` and
   ``"Really?" she asked`` do not).
6. A **blank line** (whitespace containing two newlines) ends a sentence even without a terminator. A
   single newline ends one right after a terminator cluster (not after titles and initials) and
   before a list item (``- ``, ``* ``, ``• ``, ``1. ``, ``2) ``); otherwise it is kept inside the
   sentence.
7. A piece with no letter or digit (``"!!!"`` on its own) is never emitted alone; it joins the next
   sentence (or is emitted by :meth:`~SentenceSegmenter.flush`).

Over-long text and the first fragment
-------------------------------------
When ``max_chars`` characters have accumulated with no sentence end among them, the segmenter cuts
within those ``max_chars`` characters: after the last clause mark (``, ; :`` followed by whitespace,
CJK ``、 ， ； ：``, an em dash, or a spaced ``-``/``–``), else at the last word boundary, else (one
enormous word) after exactly ``max_chars`` characters.

With ``first_fragment_words=N`` the *first* piece of a stream may end early at a clause mark, once the
piece holds at least ``N`` whitespace-separated words; this cuts the time to first audio. Every later piece
ends at sentence boundaries. :meth:`~SentenceSegmenter.flush` resets the stream, so the policy applies
again to the next one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import Enum

__all__ = ["SentenceSegmenter", "split_sentences", "split_to_fit"]

_CJK_TERMINATORS = frozenset("。！？｡")
_STRONG_TERMINATORS = frozenset("!?！？‼⁇⁈⁉؟۔।॥։።")
_TERMINATORS = frozenset(".…") | _CJK_TERMINATORS | _STRONG_TERMINATORS
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


class _Verdict(Enum):
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


def _cluster(buf: str, i: int) -> tuple[_Verdict, int]:
    """Decide the terminator cluster starting at ``buf[i]``; return the verdict and the cluster's end."""
    n = len(buf)
    j = i
    while j < n and buf[j] in _TERMINATORS:
        j += 1
    marks = buf[i:j]
    closed = False
    while j < n and (buf[j] in _CLOSERS or buf[j] in _MARKUP):
        closed = closed or buf[j] in _CLOSERS
        j += 1
    if j == n:
        return _Verdict.WAIT, j
    if any(c in _CJK_TERMINATORS for c in marks):
        return _Verdict.YES, j
    if not buf[j].isspace():
        return _Verdict.NO, j
    if closed:
        kind = _Word.MAYBE  # a quotation may go on with the sentence: "Why?" she asked.
    elif any(c in _STRONG_TERMINATORS for c in marks):
        return _Verdict.YES, j
    elif len(marks) > 1 or "…" in marks:
        kind = _Word.MAYBE  # an ellipsis
    else:
        kind = _classify_word(buf, i)
    if kind is _Word.PLAIN:
        return _Verdict.YES, j
    if kind is _Word.NEVER:
        return _Verdict.NO, j
    k = j
    while k < n and buf[k].isspace():
        if buf[k] in _NEWLINES:
            return _Verdict.YES, j
        k += 1
    while k < n and buf[k] in _MARKUP:
        k += 1
    if k == n:
        return _Verdict.WAIT, j
    return (_Verdict.YES if _starts_sentence(buf[k]) else _Verdict.NO), j


def _whitespace(buf: str, i: int) -> tuple[_Verdict, int]:
    """Decide the whitespace run at ``buf[i]``: a blank line ends a piece; return verdict and run end."""
    n = len(buf)
    newlines = 0
    k = i
    while k < n and buf[k].isspace():
        newlines += _NEWLINES.get(buf[k], 0)
        if newlines >= 2:
            return _Verdict.YES, k
        k += 1
    if k == n:
        return _Verdict.WAIT, k
    if newlines == 1:
        return _list_item(buf, k), k
    return _Verdict.NO, k


def _list_item(buf: str, k: int) -> _Verdict:
    """YES when a list item or heading marker (``- `` ``• `` ``12. `` ``3) `` ``## `` ``> ``) is at ``buf[k]``."""
    n = len(buf)
    m = k
    if buf[k] in _BULLETS:
        m = k + 1
        while buf[k] == "#" and m < n and buf[m] == "#":
            m += 1
    else:
        while m < n and buf[m].isdecimal():
            m += 1
        if m == k or (m < n and buf[m] not in ".)"):
            return _Verdict.NO
        m += 1
    if m >= n:
        return _Verdict.WAIT
    return _Verdict.YES if buf[m].isspace() else _Verdict.NO


def _clause(buf: str, i: int) -> tuple[_Verdict, int]:
    """Decide whether a clause ends after the mark at ``buf[i]``; return verdict and the clause's end."""
    n = len(buf)
    ch = buf[i]
    if ch in _CJK_CLAUSE_MARKS:
        return _Verdict.YES, i + 1
    if ch in _CLAUSE_MARKS:
        if i + 1 == n:
            return _Verdict.WAIT, n
        return (_Verdict.YES if buf[i + 1].isspace() else _Verdict.NO), i + 1
    if ch in _DASHES:
        spaced = ch in _SPACED_DASHES
        if spaced and (i == 0 or not buf[i - 1].isspace()):
            return _Verdict.NO, i + 1
        j = i
        while j < n and buf[j] in _DASHES:
            j += 1
        if j == n:
            return _Verdict.WAIT, j
        return (_Verdict.YES if not spaced or buf[j].isspace() else _Verdict.NO), j
    return _Verdict.NO, i + 1


def _is_clause_mark(ch: str) -> bool:
    return ch in _CLAUSE_MARKS or ch in _CJK_CLAUSE_MARKS or ch in _DASHES


def _force_cut(buf: str, limit: int) -> int:
    """Where to cut ``buf`` (longer than ``limit``) so the first piece has at most ``limit`` characters.

    Reads only ``buf[: limit + 1]``, so the answer does not depend on how much text has arrived beyond it.
    """
    window = buf[: limit + 1]
    best = 0
    i = 0
    while i < limit:
        if _is_clause_mark(window[i]):
            verdict, end = _clause(window, i)
            if verdict is _Verdict.YES and end <= limit:
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


class SentenceSegmenter:
    """Turn a stream of text deltas into complete sentences, each emitted as soon as it is decided.

    Sans-I/O: :meth:`feed` and :meth:`flush` only transform strings. The rules are in the module
    docstring; the pieces do not depend on how the text was chunked.
    """

    def __init__(self, *, max_chars: int = 300, first_fragment_words: int | None = None) -> None:
        if max_chars < 1:
            raise ValueError(f"max_chars must be at least 1 (got {max_chars}); pass a positive limit")
        if first_fragment_words is not None and first_fragment_words < 1:
            raise ValueError(
                f"first_fragment_words must be at least 1 or None (got {first_fragment_words}); "
                "pass None to disable the first-fragment policy"
            )
        self._max_chars = max_chars
        self._first_fragment_words = first_fragment_words
        self._buf = ""
        self._cursor = 0  # every candidate before this index is decided NO for the current piece
        self._emitted_any = False

    @property
    def pending(self) -> str:
        """Buffered text not yet emitted (leading whitespace already dropped)."""
        return self._buf

    def feed(self, text: str) -> list[str]:
        """Add a text delta; return the pieces that became complete, in order (stripped, non-empty)."""
        if not isinstance(text, str):
            raise TypeError(f"feed() takes str, not {type(text).__name__}; decode bytes as UTF-8 first")
        self._buf = self._buf + text if self._buf else text.lstrip()
        return self._drain(final=False)

    def flush(self) -> list[str]:
        """Emit everything still buffered (the unterminated tail, force-split if needed) and reset."""
        pieces = self._drain(final=True)
        self._buf = ""
        self._cursor = 0
        self._emitted_any = False
        return pieces

    def _drain(self, *, final: bool) -> list[str]:
        pieces: list[str] = []
        while self._buf:
            cut = self._find_cut(final=final)
            if cut is None:
                break
            piece = self._buf[:cut].strip()
            self._buf = self._buf[cut:].lstrip()
            self._cursor = 0
            if piece:
                pieces.append(piece)
                self._emitted_any = True
        return pieces

    def _find_cut(self, *, final: bool) -> int | None:
        """The end of the next piece in the buffer, or None until more text arrives."""
        buf = self._buf
        n = len(buf)
        limit = self._max_chars
        clauses = self._first_fragment_words is not None and not self._emitted_any
        first_alnum = next((k for k, c in enumerate(buf) if c.isalnum()), n)
        i = self._cursor
        while i < n:
            ch = buf[i]
            if ch in _TERMINATORS:
                verdict, end = _cluster(buf, i)
                resume = end
            elif ch.isspace():
                verdict, resume = _whitespace(buf, i)
                end = i
            elif clauses and _is_clause_mark(ch):
                verdict, end = _clause(buf, i)
                resume = end
                if verdict is _Verdict.YES and len(buf[:end].split()) < (self._first_fragment_words or 0):
                    verdict = _Verdict.NO
            else:
                i += 1
                continue
            if verdict is _Verdict.WAIT:
                self._cursor = i
                return self._undecided(end, final=final)
            if verdict is _Verdict.YES:
                if end > limit:
                    return _force_cut(buf, limit)
                if first_alnum < end:
                    return end
            i = max(resume, i + 1)
        self._cursor = n
        return self._undecided(n, final=final)

    def _undecided(self, end: int, *, final: bool) -> int | None:
        """Cut when the next possible piece end is ``end`` and its deciding characters are missing."""
        limit = self._max_chars
        if end > limit:
            return _force_cut(self._buf, limit)
        if not final:
            return None
        if len(self._buf.rstrip()) > limit:
            return _force_cut(self._buf, limit)
        return len(self._buf)


def split_sentences(text: str, *, max_chars: int = 300) -> list[str]:
    """Split a whole text into sentences: the same pieces a :class:`SentenceSegmenter` streams."""
    segmenter = SentenceSegmenter(max_chars=max_chars)
    return segmenter.feed(text) + segmenter.flush()


def split_to_fit(text: str, fits: Callable[[str], bool]) -> list[str]:
    """Split one piece of text into stripped pieces that each satisfy ``fits``.

    Each piece is made as long as ``fits`` allows, extending word by word; it then ends at the last clause
    mark inside that reach (``, ; :`` followed by whitespace, CJK clause marks, dashes) if there is one,
    else at the last word that fits. A word that does not fit on its own is cut into the longest prefixes
    of characters that fit, as a last resort. Joining the pieces gives back every non-whitespace character
    of ``text``, in order. ``fits`` is assumed monotone (a prefix of a fitting piece fits) and is only
    ever called with non-empty, stripped text.

    Raises ``ValueError`` when even a single character does not fit.
    """
    pieces: list[str] = []
    clause_ends = set(_clause_ends(text))
    cuts = sorted(clause_ends | set(_word_ends(text)) | {len(text)})
    start = 0
    while True:
        while start < len(text) and text[start].isspace():
            start += 1
        rest = text[start:].rstrip()
        if not rest:
            return pieces
        if fits(rest):
            pieces.append(rest)
            return pieces
        reach = 0
        best_clause = 0
        first_cut = 0
        for cut in cuts:
            if cut <= start:
                continue
            first_cut = first_cut or cut
            if not fits(text[start:cut].rstrip()):
                break
            reach = cut
            if cut in clause_ends:
                best_clause = cut
        if not reach:  # not even the first word fits: cut it by characters
            reach = start + _fitting_prefix(text[start:first_cut], fits)
        end = best_clause or reach
        pieces.append(text[start:end].rstrip())
        start = end


def _fitting_prefix(word: str, fits: Callable[[str], bool]) -> int:
    """Length of the longest prefix of ``word`` (no whitespace) that fits; at least one character."""
    if not fits(word[:1]):
        raise ValueError(
            f"split_to_fit: even the single character {word[:1]!r} does not fit; "
            "the fits() predicate must accept every single character"
        )
    length = 1
    while length < len(word) and fits(word[: length + 1]):
        length += 1
    return length


def _clause_ends(text: str) -> list[int]:
    """Every index of ``text`` a clause ends at (just after its mark)."""
    ends: list[int] = []
    i = 0
    while i < len(text):
        if _is_clause_mark(text[i]):
            verdict, end = _clause(text, i)
            if verdict is _Verdict.YES:
                ends.append(end)
            i = max(end, i + 1)
        else:
            i += 1
    return ends


def _word_ends(text: str) -> list[int]:
    """Every index of ``text`` a word ends at (whitespace follows)."""
    return [k for k in range(1, len(text)) if text[k].isspace() and not text[k - 1].isspace()]
