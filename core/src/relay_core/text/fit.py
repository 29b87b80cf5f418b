"""Cut one over-long piece of text into pieces that a model accepts."""

from __future__ import annotations

from collections.abc import Callable

from relay_core.text.boundaries import clause_ends, word_ends

__all__ = ["split_to_fit"]


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
            if cut in clauses:
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
