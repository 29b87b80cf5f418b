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
A *terminator cluster* is a run of ``. ! ? …`` (also the CJK ``。 ！ ？ ｡`` and ``؟ ۔ । ॥ ։ ።``, which
count like ``?``) followed by any closing quotes or brackets (``" ' ” ’ » ) ] }`` and the CJK closers) and
markdown emphasis (``* _ ` ~``). The closers stay with the sentence they close: ``He said "Hi." Then``
gives ``He said "Hi."``; ``**Done.** Next`` gives ``**Done.**``.

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
     sentence (an upper-case or uncased letter, or an opening quote/bracket, after any markdown
     emphasis) or a newline follows: the segmenter waits for that next character;
   * a number alone at the start of a sentence (``1.``, a list marker) or a lone letter does not end it.

5. An **ellipsis** (``…`` or two or more dots) and any cluster that **ends in a closing quote or
   bracket** follow the suffix-abbreviation rule: they end the sentence when a newline follows or the
   next word is capitalised (``Wait... What?`` and ``He said "Hi." Then`` split; ``Well... maybe`` and
   ``"Really?" she asked`` do not).
6. A **blank line** (whitespace containing two newlines) ends a sentence even without a terminator. A
   single newline ends one right after a terminator cluster (not after titles and initials) and
   before a list item or heading (``- ``, ``* ``, ``• ``, ``1. ``, ``2) ``, ``## ``, ``> ``; numbered
   markers have at most three digits); otherwise it stays inside the sentence, as written.
7. A piece with no letter or digit (``"!!!"`` on its own) is never emitted alone; it joins the next
   sentence (or is emitted by :meth:`~SentenceSegmenter.flush`).

Over-long text and the first fragment
-------------------------------------
When ``max_chars`` characters have accumulated with no sentence end among them, the segmenter cuts
within those ``max_chars`` characters: after the last clause mark (``, ; :`` followed by whitespace,
CJK ``、 ， ； ：``, an em dash, or a spaced ``-``/``–``), else at the last word boundary, else (one
enormous word) after exactly ``max_chars`` characters.

With ``first_fragment_words=N`` the *first* piece of a stream may end early, once the piece holds at least
``N`` whitespace-separated words (a run of CJK text without spaces counts as one word); this cuts the time to
first audio. Every later piece ends at sentence boundaries. The first piece ends at the first of:

* a **clause mark** (as above);
* a **phrase boundary**: the whitespace before a conjunction or relative pronoun (``and``, ``because``,
  ``which`` ...; :data:`relay_core.text.boundaries.CLAUSE_STARTERS`), or, once the piece holds twice ``N`` words
  (:data:`PREPOSITION_FACTOR`), before a preposition (``for``, ``to``, ``at`` ...;
  :data:`relay_core.text.boundaries.PHRASE_STARTERS`; never ``of``), when the word before it can end a phrase
  (not an article, auxiliary or another such word: never ``because | of`` or ``the | with``). Most first
  sentences of agent replies have no comma in their first words ("Your order left the warehouse this morning
  and should arrive by Thursday."): they are cut before ``and``. Whisper hears a cut before a preposition as a
  sentence end far more often than one before a conjunction (docs/benchmarks.md §9), hence the longer minimum;
* the **hard cap**: the whitespace after ``first_fragment_max_words`` words (default four times ``N``:
  :data:`FIRST_FRAGMENT_CAP_FACTOR`).

:func:`first_fragment` applies the same policy to a whole text (the TTS container's per-request option).
:meth:`~SentenceSegmenter.flush` resets the stream, so the policy applies again to the next one.

When a streamed piece comes out
-------------------------------
:meth:`~SentenceSegmenter.feed` emits a piece on the first character that decides it, and holds text
back only while a later character could still change the decision:

* a terminator at the very end of the buffer waits for one more character (``3.`` may become ``3.14``,
  ``e.g`` may still be growing, ``..`` may become ``...``, a closing quote may follow);
* after a plain word, ``!``, ``?`` or a CJK terminator, nothing more: ``"Hello world. "`` comes out on
  the space (for CJK, on the next character), so an agent that feeds token by token gets each sentence
  when the token after it arrives;
* after a suffix abbreviation, an acronym, an ellipsis or a closing quote, it waits for the first
  character of the next word (or a newline);
* trailing whitespace waits for what follows it, since it may turn into a blank line or a list item;
* with the first-fragment policy, a clause mark waits for the whitespace after it, and a word boundary
  waits for the whole next word (is it ``and`` or ``android``?).

Known limits
------------
These are heuristics, chosen for LLM output in the languages Kokoro speaks. A single letter never ends a
sentence (``Plan B. Then`` stays one piece), a lower-case word after a suffix abbreviation continues the
sentence (``at 5 p.m. we left``), and text without spaces or terminators (Thai, say) is cut only by
``max_chars``.
"""

from relay_core.text.boundaries import (
    TERMINATORS,
    Verdict,
    decide_clause,
    decide_cluster,
    decide_phrase,
    decide_whitespace,
    force_cut,
    is_clause_mark,
)
from relay_core.text.fit import split_to_fit

__all__ = [
    "FIRST_FRAGMENT_CAP_FACTOR",
    "PREPOSITION_FACTOR",
    "SentenceSegmenter",
    "first_fragment",
    "split_sentences",
    "split_to_fit",
]

FIRST_FRAGMENT_CAP_FACTOR = 4
"""The first fragment's hard cap, in words, is this many times ``first_fragment_words`` unless given."""
PREPOSITION_FACTOR = 2
"""A first fragment ends before a preposition only once it holds this many times ``first_fragment_words`` words
(before a conjunction or relative pronoun: ``first_fragment_words``)."""


class SentenceSegmenter:
    """Turn a stream of text deltas into complete sentences, each emitted as soon as it is decided.

    Sans-I/O: :meth:`feed` and :meth:`flush` only transform strings. The rules are in the module
    docstring; the pieces do not depend on how the text was chunked.
    """

    def __init__(
        self,
        *,
        max_chars: int = 300,
        first_fragment_words: int | None = None,
        first_fragment_max_words: int | None = None,
    ) -> None:
        if max_chars < 1:
            raise ValueError(f"max_chars must be at least 1 (got {max_chars}); pass a positive limit")
        if first_fragment_words is not None and first_fragment_words < 1:
            raise ValueError(
                f"first_fragment_words must be at least 1 or None (got {first_fragment_words}); "
                "pass None to disable the first-fragment policy"
            )
        if first_fragment_max_words is not None and (
            first_fragment_words is None or first_fragment_max_words < first_fragment_words
        ):
            raise ValueError(
                f"first_fragment_max_words={first_fragment_max_words} needs first_fragment_words at most as large "
                f"(got {first_fragment_words}); leave it None for {FIRST_FRAGMENT_CAP_FACTOR} x first_fragment_words"
            )
        self._max_chars = max_chars
        self._first_fragment_words = first_fragment_words
        self._first_fragment_cap = first_fragment_max_words or FIRST_FRAGMENT_CAP_FACTOR * (first_fragment_words or 0)
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
        min_words = None if self._emitted_any else self._first_fragment_words
        first_alnum = next((k for k, c in enumerate(buf) if c.isalnum()), n)
        i = self._cursor
        while i < n:
            if i > limit:  # every piece end from here on is too far: cut within the limit now
                return force_cut(buf, limit)
            ch = buf[i]
            if ch in TERMINATORS:
                verdict, end = decide_cluster(buf, i)
                resume = end
            elif ch.isspace():
                verdict, resume = decide_whitespace(buf, i)
                end = i
                if verdict is Verdict.NO and min_words is not None:
                    verdict = decide_phrase(
                        buf,
                        i,
                        resume,
                        min_words=min_words,
                        max_words=self._first_fragment_cap,
                        preposition_words=min(PREPOSITION_FACTOR * min_words, self._first_fragment_cap),
                    )
            elif min_words is not None and is_clause_mark(ch):
                verdict, end = decide_clause(buf, i)
                resume = end
                if verdict is Verdict.YES and len(buf[:end].split()) < min_words:
                    verdict = Verdict.NO
            else:
                i += 1
                continue
            if verdict is Verdict.WAIT:
                self._cursor = i
                return self._undecided(end, final=final)
            if verdict is Verdict.YES:
                if end > limit:
                    return force_cut(buf, limit)
                if first_alnum < end:
                    return end
            i = max(resume, i + 1)
        self._cursor = n
        return self._undecided(n, final=final)

    def _undecided(self, end: int, *, final: bool) -> int | None:
        """Cut when the next possible piece end is ``end`` and its deciding characters are missing."""
        limit = self._max_chars
        if end > limit:
            return force_cut(self._buf, limit)
        if not final:
            return None
        if len(self._buf.rstrip()) > limit:
            return force_cut(self._buf, limit)
        return len(self._buf)


def first_fragment(text: str, *, words: int, max_chars: int = 300) -> tuple[str, str]:
    """``(fragment, rest)``: the first piece of ``text`` under the first-fragment policy of ``words`` words, and
    the source text after it (unstripped, so the whitespace between them can still be read). ``rest`` is empty
    when the whole text is one piece."""
    segmenter = SentenceSegmenter(max_chars=max_chars, first_fragment_words=words)
    pieces = segmenter.feed(text) + segmenter.flush()
    if not pieces:
        return "", ""
    end = text.index(pieces[0]) + len(pieces[0])
    return pieces[0], text[end:]


def split_sentences(text: str, *, max_chars: int = 300) -> list[str]:
    """Split a whole text into sentences: the same pieces a :class:`SentenceSegmenter` streams."""
    segmenter = SentenceSegmenter(max_chars=max_chars)
    return segmenter.feed(text) + segmenter.flush()
