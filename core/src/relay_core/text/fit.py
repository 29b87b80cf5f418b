"""Cut one over-long piece of text into pieces that a model accepts."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from functools import partial

from relay_core.text.boundaries import clause_ends, word_ends

__all__ = ["split_to_fit"]


def split_to_fit(text: str, fits: Callable[[str], bool]) -> list[str]:
    """Split one piece of text into stripped pieces that each satisfy ``fits``.

    Each piece is made as long as ``fits`` allows, in whole words; it then ends at the last clause
    mark inside that reach (``, ; :`` followed by whitespace, CJK clause marks, dashes) if there is one,
    else at the last word that fits. A word that does not fit on its own is cut into the longest prefixes
    of characters that fit, as a last resort. Joining the pieces gives back every non-whitespace character
    of ``text``, in order. ``fits`` is assumed monotone (a prefix of a fitting piece fits), is only
    ever called with non-empty, stripped text, and is called O(log n) times per piece (it may be costly,
    like counting phoneme tokens).

    Raises ``ValueError`` when even a single character does not fit.
    """
    pieces: list[str] = []
    clauses = set(clause_ends(text))
    cuts = sorted(clauses | set(word_ends(text)) | {len(text)})
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
        ahead = cuts[bisect_right(cuts, start) :]
        last = _reach(len(ahead), partial(_span_fits, text=text, start=start, ends=ahead, fits=fits))
        if last >= 0:
            end = next((cut for cut in reversed(ahead[: last + 1]) if cut in clauses), ahead[last])
        else:  # not even the first word fits: cut it by characters
            word = text[start : ahead[0]]
            chars = _reach(len(word), partial(_span_fits, text=word, start=0, ends=range(1, len(word) + 1), fits=fits))
            if chars < 0:
                raise ValueError(
                    f"split_to_fit: even the single character {word[:1]!r} does not fit; "
                    "the fits() predicate must accept every single character"
                )
            end = start + chars + 1
        pieces.append(text[start:end].rstrip())
        start = end


def _span_fits(k: int, *, text: str, start: int, ends: Sequence[int], fits: Callable[[str], bool]) -> bool:
    """Whether ``text[start : ends[k]]`` (right-stripped) fits."""
    return fits(text[start : ends[k]].rstrip())


def _reach(count: int, fits_at: Callable[[int], bool]) -> int:
    """The largest ``k < count`` with ``fits_at(k)``, or -1 if ``fits_at(0)`` is false.

    Assumes ``fits_at`` is monotone (true up to some index, false after); gallops then bisects, so it
    calls ``fits_at`` O(log count) times, which matters when ``fits`` phonemizes the text.
    """
    if count == 0 or not fits_at(0):
        return -1
    good, bad, step = 0, count, 1
    while good + step < count:
        if not fits_at(good + step):
            bad = good + step
            break
        good += step
        step *= 2
    while bad - good > 1:
        middle = (good + bad) // 2
        if fits_at(middle):
            good = middle
        else:
            bad = middle
    return good
