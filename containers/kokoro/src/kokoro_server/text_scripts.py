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

from kokoro_server.engines.errors import EngineError
from kokoro_server.engines.g2p import speaks_japanese
from kokoro_server.engines.speech_engine import SpeechEngine
from relay_core.errors import ProtocolError
from relay_core.languages import Language, Script, languages_speaking
from relay_core.speech_options import SpeechOptions
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


_KOKORO_SCRIPTS = {"DEVANAGARI": Script.DEVANAGARI, "CJK": Script.HAN, "HIRAGANA": Script.KANA, "KATAKANA": Script.KANA}
"""Unicode script prefixes that are scripts of Kokoro's languages (:data:`relay_core.languages.LANGUAGES`)."""


def foreign_script(
    text: str, lang: str, *, language: Language | None = None, japanese: bool | None = None
) -> ForeignScript | None:
    """The first letter of ``text`` that a request cannot speak, or None when all of it is speakable.

    ``language`` (the request's Kokoro language, :meth:`kokoro_server.engines.Engine.language_for`) speaks Latin
    script and its own (Devanagari for Hindi, hanzi for Mandarin); None: the default G2P ``lang`` decides (a
    Latin-script espeak-ng language speaks Latin only; any other is not second-guessed). In either case Japanese
    script is speakable when the Japanese G2P is installed (``japanese`` None: look), as it always was."""
    if language is None and lang.lower().split("-")[0] not in LATIN_SCRIPT_LANGUAGES:
        return None
    own = language.scripts if language is not None else frozenset({Script.LATIN})
    japanese_ok = speaks_japanese() if japanese is None else japanese
    for char in text:
        category = unicodedata.category(char)
        if not category.startswith("L") or category == "Lm":
            continue
        if char in _ALSO_LATIN or unicodedata.name(char, "").startswith("LATIN "):
            continue
        script = _script_of(char)
        if (japanese_ok and script in JAPANESE_SCRIPTS) or _KOKORO_SCRIPTS.get(script) in own:
            continue
        return ForeignScript(char=char, script=script, language=_SCRIPT_LANGUAGE.get(script, script.title()))
    return None


def check_speakable(
    text: str, lang: str, *, language: Language | None = None, request_id: str | None = None, name: str = "text"
) -> None:
    """Raise ``ProtocolError`` (code ``unsupported_text``) if ``text`` has letters the request cannot speak
    (:func:`foreign_script`); the message names the languages that can, and how to ask for one."""
    found = foreign_script(text, lang, language=language)
    if found is None:
        return
    also = " or Japanese" if speaks_japanese() else ""
    reader = f"{language.name} ({language.code})" if language is not None else f"this server's {lang} G2P"
    script = _KOKORO_SCRIPTS.get(found.script)
    able = languages_speaking(script) if script is not None else ()
    remedy = (
        "send it with 'lang' set to "
        + " or ".join(f"'{other.code}' ({other.name})" for other in able)
        + " or with a voice of that language"
        if able
        else f"none of Kokoro's languages speaks {found.language}"
    )
    raise ProtocolError(
        f"'{name}' contains {found.language} script ({found.char!r}, {found.script.lower()}), which {reader} cannot "
        f"speak (it would read out letter names): send text in Latin script{also}, or {remedy}",
        code=TtsErrorCode.UNSUPPORTED_TEXT.value,
        request_id=request_id,
    )


def check_request_speakable(
    engine: SpeechEngine,
    text: str,
    options: SpeechOptions,
    default_lang: str,
    *,
    request_id: str | None = None,
    name: str = "text",
) -> None:
    """:func:`check_speakable` for one request: ``text`` in the language ``engine`` reads it in for ``options``
    (its ``lang``, else its voice's, voice None meaning the engine's default). A voice the engine refuses is left to
    the plan, which says why."""
    try:
        language = engine.language_for(options.voice or engine.default_voice, options.language)
    except EngineError:
        return
    check_speakable(text, default_lang, language=language, request_id=request_id, name=name)
