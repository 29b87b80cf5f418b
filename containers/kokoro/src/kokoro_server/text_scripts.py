"""Which writing scripts the configured G2P language can speak, and the refusal of text it cannot.

espeak-ng with a Latin-script language (``en-us``, the default) does not speak other scripts: it reads each
Japanese character as "Japanese letter", Cyrillic and Greek words letter by letter, Arabic as "Arabic letter ...".
Such text is refused before any synthesis with ``unsupported_text`` (HTTP 400; on the WebSocket a rejected
``error``), naming the script found and what to do, instead of answering nonsense audio with 200.

The rule: for a Latin-script G2P language (:data:`LATIN_SCRIPT_LANGUAGES`), every letter must be a Latin letter
(``LATIN ...`` in its Unicode name; fullwidth forms are not) or a modifier letter; digits, punctuation, symbols and
spaces are always allowed. For any other G2P language no check is made (espeak-ng's own script applies).
Japanese (kana, kanji, fullwidth forms) is spoken with the Japanese G2P (misaki on OpenJTalk, see
:mod:`kokoro_server.engines.g2p`) when it is installed, as it is with the server's dependencies; without it,
Japanese is refused like any other script.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from kokoro_server.engines.g2p import speaks_japanese
from relay_core.errors import ProtocolError
from relay_core.tts.messages import TtsErrorCode

LATIN_SCRIPT_LANGUAGES = frozenset(
    [
        "en",
        "es",
        "fr",
        "it",
        "pt",
        "de",
        "nl",
        "pl",
        "sv",
        "da",
        "nb",
        "no",
        "fi",
        "cs",
        "sk",
        "hu",
        "ro",
        "tr",
        "ca",
        "id",
        "ms",
        "vi",
        "af",
        "et",
        "lv",
        "lt",
        "sl",
        "hr",
        "sq",
        "eu",
        "ga",
        "cy",
        "is",
        "mt",
        "sw",
    ]
)
"""espeak-ng language families written in Latin script (``en-us`` → ``en``)."""

_SCRIPT_LANGUAGE = {
    "CJK": "Chinese or Japanese",
    "HIRAGANA": "Japanese",
    "KATAKANA": "Japanese",
    "HALFWIDTH KATAKANA": "Japanese",
    "HANGUL": "Korean",
    "CYRILLIC": "Russian (or another Cyrillic-script language)",
    "GREEK": "Greek",
    "ARABIC": "Arabic",
    "HEBREW": "Hebrew",
    "THAI": "Thai",
    "DEVANAGARI": "Hindi (or another Devanagari-script language)",
    "FULLWIDTH": "fullwidth (East Asian typesetting)",
}
_ALSO_LATIN = frozenset("\u00aa\u00ba")
"""The ordinal indicators ª and º."""


@dataclass(frozen=True, slots=True)
class ForeignScript:
    """The first letter of a script the G2P language cannot speak."""

    char: str
    script: str
    """The Unicode script prefix of its name, e.g. ``HIRAGANA``."""
    language: str
    """A language written in it, for the message."""


def _script_of(char: str) -> str:
    name = unicodedata.name(char, "")
    for prefix in _SCRIPT_LANGUAGE:
        if name.startswith(prefix):
            return prefix
    return name.split(" ", 1)[0] if name else f"U+{ord(char):04X}"


JAPANESE_SCRIPTS = frozenset({"HIRAGANA", "KATAKANA", "HALFWIDTH KATAKANA", "CJK", "FULLWIDTH"})
"""Scripts that go to the Japanese G2P (kanji are read as Japanese, so Chinese text is read in Japanese)."""


def foreign_script(text: str, lang: str, *, japanese: bool | None = None) -> ForeignScript | None:
    """The first letter of ``text`` that the G2P ``lang`` cannot speak, or None when all of it is speakable.
    Japanese script is speakable when the Japanese G2P is installed (``japanese`` None: look)."""
    if lang.lower().split("-")[0] not in LATIN_SCRIPT_LANGUAGES:
        return None
    japanese_ok = speaks_japanese() if japanese is None else japanese
    for char in text:
        category = unicodedata.category(char)
        if not category.startswith("L") or category == "Lm":
            continue
        if char in _ALSO_LATIN or unicodedata.name(char, "").startswith("LATIN "):
            continue
        script = _script_of(char)
        if japanese_ok and script in JAPANESE_SCRIPTS:
            continue
        return ForeignScript(char=char, script=script, language=_SCRIPT_LANGUAGE.get(script, script.title()))
    return None


def check_speakable(text: str, lang: str, *, request_id: str | None = None, name: str = "text") -> None:
    """Raise ``ProtocolError`` (code ``unsupported_text``) if ``text`` has letters the G2P ``lang`` cannot speak."""
    found = foreign_script(text, lang)
    if found is None:
        return
    also = " or Japanese" if speaks_japanese() else ""
    raise ProtocolError(
        f"'{name}' contains {found.language} script ({found.char!r}, {found.script.lower()}), which this server's "
        f"{lang} G2P cannot speak (it would read out letter names): send text in Latin script{also}, or send "
        f"{found.language} text to a server whose G2P language speaks it",
        code=TtsErrorCode.UNSUPPORTED_TEXT.value,
        request_id=request_id,
    )
