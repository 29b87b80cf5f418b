"""Kokoro's nine languages: the one table every part reads (the container's G2P, the voice catalog, the request
field ``lang``, the clients' voice groups).

A Kokoro voice's language is the first letter of its name (``af_heart`` is American English, ``zf_xiaobei``
Mandarin). A request may name a language explicitly with ``lang``; it then overrides the voice's. The wire value is
the language's ``code`` (``"en-us"``, ``"es"``, ``"zh"`` ...); :func:`parse_lang` also accepts the voice letter
(``"a"``), the espeak-ng voice (``"fr-fr"``) and a bare family where it names one language (``"en"`` is
American English, ``"pt"`` Brazilian Portuguese, ``"cmn"`` Mandarin), case-insensitively, ``_`` for ``-``.

What each language speaks (its ``scripts``) decides which text it refuses with ``unsupported_text``: Latin-script
words inside Japanese, Mandarin or Hindi text are read as English, so every language speaks Latin script.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Final

from relay_core.errors import InvalidFieldError


class G2PKind(StrEnum):
    """Which grapheme-to-phoneme front end reads a language."""

    ESPEAK = "espeak"
    """espeak-ng (the Latin-script languages and Hindi)."""
    JAPANESE = "japanese"
    """misaki's Japanese G2P on OpenJTalk."""
    MANDARIN = "mandarin"
    """misaki's Mandarin G2P (jieba + pypinyin)."""


class Script(StrEnum):
    """A writing system a language speaks (named as in Unicode character names)."""

    LATIN = "Latin"
    DEVANAGARI = "Devanagari"
    KANA = "kana"
    HAN = "Han (kanji / hanzi)"


@dataclass(frozen=True, slots=True)
class Language:
    """One of Kokoro's languages."""

    code: str
    """The wire value of ``lang`` (lower case)."""
    letter: str
    """The first letter of its voices' names."""
    name: str
    """In English, for people."""
    g2p: G2PKind
    espeak: str
    """The espeak-ng voice reading its text (for Japanese and Mandarin: the one reading Latin-script words)."""
    scripts: frozenset[Script]
    """What it speaks; letters of any other script are refused."""


_LATIN = frozenset({Script.LATIN})
LANGUAGES: Final[tuple[Language, ...]] = (
    Language("en-us", "a", "American English", G2PKind.ESPEAK, "en-us", _LATIN),
    Language("en-gb", "b", "British English", G2PKind.ESPEAK, "en-gb", _LATIN),
    Language("es", "e", "Spanish", G2PKind.ESPEAK, "es", _LATIN),
    Language("fr", "f", "French", G2PKind.ESPEAK, "fr-fr", _LATIN),
    Language("hi", "h", "Hindi", G2PKind.ESPEAK, "hi", frozenset({Script.DEVANAGARI, Script.LATIN})),
    Language("it", "i", "Italian", G2PKind.ESPEAK, "it", _LATIN),
    Language("pt-br", "p", "Brazilian Portuguese", G2PKind.ESPEAK, "pt-br", _LATIN),
    Language("ja", "j", "Japanese", G2PKind.JAPANESE, "en-us", frozenset({Script.KANA, Script.HAN, Script.LATIN})),
    Language("zh", "z", "Mandarin Chinese", G2PKind.MANDARIN, "en-us", frozenset({Script.HAN, Script.LATIN})),
)
"""Every language, in Kokoro's order (``a b e f h i p j z``); the first is the default for a voice of no known
language."""

BY_CODE: Final = MappingProxyType({language.code: language for language in LANGUAGES})
BY_LETTER: Final = MappingProxyType({language.letter: language for language in LANGUAGES})
_ALIASES: Final = MappingProxyType(
    {
        **{language.espeak: language for language in LANGUAGES if language.g2p is G2PKind.ESPEAK},
        "en": BY_CODE["en-us"],
        "pt": BY_CODE["pt-br"],
        "cmn": BY_CODE["zh"],
        "zh-cn": BY_CODE["zh"],
        "ja-jp": BY_CODE["ja"],
    }
)
MAX_LANG_CHARS: Final = 16
LANG_CODES: Final = ", ".join(language.code for language in LANGUAGES)


def parse_lang(value: str, *, request_id: str | None = None) -> Language:
    """The language ``value`` names (a code, a voice letter or an alias, see the module doc); raises
    :class:`~relay_core.errors.InvalidFieldError` (field ``lang``) listing the codes when it names none."""
    key = value.strip().lower().replace("_", "-")
    found = BY_CODE.get(key) or BY_LETTER.get(key) or _ALIASES.get(key)
    if found is None:
        raise InvalidFieldError(
            f"'lang' {value[:MAX_LANG_CHARS]!r} is not one of Kokoro's languages: use one of {LANG_CODES} "
            "(or leave it out to use the voice's language)",
            request_id=request_id,
        )
    return found


def language_of_voice(name: str) -> Language | None:
    """The language of a Kokoro voice name (``af_heart`` → American English), or None for a name that does not
    follow Kokoro's ``<letter><gender>_<name>`` pattern (an unofficial pack, a custom name)."""
    if len(name) < 3 or name[2] != "_" or name[1] not in "fm":
        return None
    return BY_LETTER.get(name[0].lower())


def languages_speaking(script: Script) -> tuple[Language, ...]:
    """The languages whose text may use ``script`` (for the message that refuses it)."""
    return tuple(language for language in LANGUAGES if script in language.scripts)


__all__ = [
    "BY_CODE",
    "BY_LETTER",
    "LANGUAGES",
    "LANG_CODES",
    "MAX_LANG_CHARS",
    "G2PKind",
    "Language",
    "Script",
    "language_of_voice",
    "languages_speaking",
    "parse_lang",
]
