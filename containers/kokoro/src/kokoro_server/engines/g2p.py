"""Grapheme-to-phoneme front end: text → Kokoro phonemes → token ids.

espeak-ng (through ``phonemizer-fork``, with the library and data shipped by ``espeakng-loader``, so
it works offline) turns text into IPA; :class:`Phonemizer` rewrites that IPA into the symbols Kokoro
was trained on, and :class:`Tokenizer` maps them to vocabulary ids.

Japanese (runs of kana and kanji, with the digits and punctuation inside them) goes to misaki's Japanese G2P on
OpenJTalk instead (:class:`JapaneseG2P`; ``pyopenjtalk-plus`` ships its dictionary in its wheels, so it works
offline), whatever the espeak-ng language: espeak-ng would read each character as "Japanese letter". This is how
the Japanese voice packs (``jf_*``, ``jm_*``) speak Japanese.
"""

from __future__ import annotations

import importlib.util
import logging
import re
import threading
import unicodedata
from collections.abc import Callable, Mapping
from types import MappingProxyType

import espeakng_loader
from phonemizer.backend import EspeakBackend
from phonemizer.backend.espeak.wrapper import EspeakWrapper

from kokoro_server.engines.errors import EngineError
from relay_core import limits
from relay_core.languages import G2PKind, Language

_JAPANESE_LETTER = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff21-\uff3a\uff41-\uff5a\uff66-\uff9f々〆"
"""Kana, kanji, fullwidth Latin letters, halfwidth katakana."""
_JAPANESE_INSIDE = "\u3000-\u303f\uff01-\uff20\u30fc0-9 "
"""Japanese punctuation, fullwidth digits and signs, the long-vowel mark, digits and spaces."""
_JAPANESE_RUN = re.compile(
    f"[{_JAPANESE_LETTER}](?:[{_JAPANESE_LETTER}{_JAPANESE_INSIDE}]*[{_JAPANESE_LETTER}\u3000-\u303f\uff01-\uff20\u30fc0-9])?"
)
"""A run of Japanese text: starts with a Japanese letter and goes on over Japanese letters, punctuation, digits and
spaces, ending before trailing spaces."""

_ESPEAK_LOCK = threading.Lock()
"""espeak-ng keeps global state: every call into it, in any :class:`Phonemizer`, holds this lock."""

_WHITESPACE = re.compile(r"\s+")
_SYLLABIC = re.compile(r"(\S)\u0329")

# Rewrites applied to every language: espeak writes affricates as two letters, Kokoro has one symbol.
_COMMON_REWRITES: tuple[tuple[str, str], ...] = (("dʒ", "ʤ"), ("tʃ", "ʧ"))

# English: Kokoro's English phoneme set writes diphthongs as single capitals and uses ɹ for r.
_ENGLISH_REWRITES: tuple[tuple[str, str], ...] = (
    ("eɪ", "A"),
    ("aɪ", "I"),
    ("aʊ", "W"),
    ("ɔɪ", "Y"),
    ("oʊ", "O"),
    ("əʊ", "Q"),
    ("r", "ɹ"),
)

# American English: r-coloured ɜ, and no length marks.
_AMERICAN_REWRITES: tuple[tuple[str, str], ...] = (("ɜːɹ", "ɜɹ"), ("ɜː", "ɜɹ"), ("ː", ""))


_TIED_REWRITES: tuple[tuple[str, str], ...] = (
    ("a^ɪ", "I"),
    ("a^ʊ", "W"),
    ("e^ɪ", "A"),
    ("o^ʊ", "O"),
    ("ə^ʊ", "Q"),
    ("ɔ^ɪ", "Y"),
    ("d^z", "ʣ"),
    ("d^ʒ", "ʤ"),
    ("t^s", "ʦ"),
    ("t^ʃ", "ʧ"),
    ("s^s", "S"),
    ("^", ""),
    ("-", ""),
)
"""Every other espeak-ng language is read with tie marks (``^``), so that a diphthong or affricate espeak writes as
one sound becomes Kokoro's one symbol for it (``t^s`` → ``ʦ``) while two sounds side by side stay two; leftover
ties and espeak's word-joining hyphens go."""
_TIE = "^"


def _is_english(language: str) -> bool:
    return language.lower().startswith("en")


def _rewrites_for(language: str) -> tuple[tuple[str, str], ...]:
    lang = language.lower()
    if not _is_english(lang):
        return _TIED_REWRITES
    rules = _COMMON_REWRITES
    if lang in {"en", "en-us"}:
        rules = _AMERICAN_REWRITES + rules
    return rules + _ENGLISH_REWRITES


def read_runs(text: str, run: re.Pattern[str], *, inside: Callable[[str], str], outside: Callable[[str], str]) -> str:
    """``text`` (NFC, whitespace collapsed) read by ``inside`` where ``run`` matches and by ``outside`` elsewhere, the
    pieces' phonemes joined by spaces in reading order; ``""`` when nothing in it is speakable. ``inside`` is called
    only for a match (a G2P that loads a dictionary is loaded only for text that needs it)."""
    clean = _WHITESPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()
    if not clean:
        return ""
    pieces: list[str] = []
    position = 0
    for found in run.finditer(clean):
        pieces.append(outside(clean[position : found.start()]))
        pieces.append(inside(found.group()))
        position = found.end()
    pieces.append(outside(clean[position:]))
    return " ".join(piece for piece in pieces if piece)


class Phonemizer:
    """Text → Kokoro phoneme string for one espeak-ng language (default ``en-us``); thread-safe."""

    def __init__(self, language: str = "en-us") -> None:
        self.language = language
        self._rewrites = _rewrites_for(language)
        quiet = logging.getLogger("kokoro_server.engines.espeak")
        quiet.setLevel(logging.ERROR)
        with _ESPEAK_LOCK:
            EspeakWrapper.set_library(espeakng_loader.get_library_path())
            EspeakWrapper.set_data_path(espeakng_loader.get_data_path())
            try:
                self._backend = EspeakBackend(
                    language,
                    preserve_punctuation=True,
                    with_stress=True,
                    tie=False if _is_english(language) else _TIE,
                    language_switch="remove-flags",
                    words_mismatch="ignore",
                    logger=quiet,
                )
            except RuntimeError as exc:
                raise EngineError(
                    f"espeak-ng does not support language {language!r} ({exc}): use an espeak-ng code like 'en-us'"
                ) from exc

    def __call__(self, text: str) -> str:
        """Phonemize ``text``; returns ``""`` for text without anything speakable. Japanese runs go to
        :class:`JapaneseG2P`, the rest to espeak-ng."""
        return read_runs(text, _JAPANESE_RUN, inside=lambda run: japanese_g2p()(run), outside=self._espeak)  # noqa: PLW0108 - lazy

    def _espeak(self, text: str) -> str:
        if not text.strip():
            return ""
        with _ESPEAK_LOCK:
            ipa = self._backend.phonemize([text.strip()], strip=True)[0]
        return self.rewrite(ipa)

    def rewrite(self, ipa: str) -> str:
        """Map espeak IPA onto Kokoro's symbols (syllabic consonants get a leading ``ᵊ``)."""
        phonemes = _SYLLABIC.sub(r"ᵊ\1", ipa)
        for source, target in self._rewrites:
            phonemes = phonemes.replace(source, target)
        return _WHITESPACE.sub(" ", phonemes).strip()


JAPANESE_REWRITES: tuple[tuple[str, str], ...] = (
    ("g", "ɡ"),
    ("G", "ɡw"),
    ("K", "kw"),
    ("ƫ", "tʲ"),
    ("ᶀ", "bʲ"),
    ("ᶁ", "dʲ"),
    ("ᶃ", "ɡʲ"),
    ("ᶄ", "kʲ"),
    ("ᶆ", "mʲ"),
    ("ᶈ", "pʲ"),
    ("ᶉ", "ɾʲ"),
)
"""misaki's Japanese symbols that Kokoro's vocabulary lacks, written with symbols it has (ASCII g is ɡ there;
palatalised consonants take ʲ, labialised ones w)."""


class JapaneseG2P:
    """Japanese text → Kokoro phonemes with misaki's Japanese G2P on OpenJTalk (loaded on first use: about 3 s and
    the dictionary's memory, only for servers that are sent Japanese); thread-safe."""

    def __init__(self) -> None:
        from misaki.ja import JAG2P  # noqa: PLC0415 - loads OpenJTalk's dictionary

        self._g2p = JAG2P(version="pyopenjtalk", unk="")
        self._lock = threading.Lock()

    def __call__(self, text: str) -> str:
        with self._lock:
            marked, _tokens = self._g2p(text)
        # misaki appends one pitch mark per phoneme character (the model here does not take them): keep the first half
        phonemes = marked[: len(marked) // 2]
        for source, target in JAPANESE_REWRITES:
            phonemes = phonemes.replace(source, target)
        return _WHITESPACE.sub(" ", phonemes).strip()


class _OnFirstUse[T]:
    """One instance per process of a G2P that loads a dictionary, created by the first caller (the others wait)."""

    def __init__(self, create: Callable[[], T]) -> None:
        self._create = create
        self._made: list[T] = []
        self._lock = threading.Lock()

    def __call__(self) -> T:
        with self._lock:
            if not self._made:
                self._made.append(self._create())
            return self._made[0]


japanese_g2p = _OnFirstUse(JapaneseG2P)
"""The process's one :class:`JapaneseG2P`, created on first use."""


def speaks_japanese() -> bool:
    """True when the Japanese G2P is installed (it is a dependency of the server; an install without it refuses
    Japanese text instead of reading letter names)."""
    return all(importlib.util.find_spec(name) is not None for name in ("misaki", "pyopenjtalk"))


_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_HAN_INSIDE = "\u3000-\u303f\uff01-\uff20\uff5e0-9.,:;!?%\u00b7 "
_HAN_RUN = re.compile(f"[{_HAN}](?:[{_HAN}{_HAN_INSIDE}]*[{_HAN}\u3000-\u303f\uff01-\uff20\uff5e0-9%])?")
"""A run of Chinese text: starts with a hanzi and goes on over hanzi, CJK and ASCII punctuation, digits and spaces
(misaki reads digits in it as Chinese numbers), ending before trailing spaces."""


class MandarinG2P:
    """Mandarin text → Kokoro phonemes with misaki's Mandarin G2P (jieba word segmentation, pypinyin, tones as
    Kokoro's arrows), the version Kokoro v1.0's ``zf_*``/``zm_*`` voices were trained on. Loaded on first use (jieba's
    dictionary takes about a second); thread-safe."""

    def __init__(self) -> None:
        import jieba  # noqa: PLC0415
        from misaki.zh import ZHG2P  # noqa: PLC0415 - loads jieba and pypinyin's dictionaries

        jieba.setLogLevel(logging.WARNING)  # it logs its dictionary's loading at DEBUG to stderr
        self._g2p = ZHG2P(unk="")
        self._lock = threading.Lock()

    def __call__(self, text: str) -> str:
        with self._lock:
            phonemes, _tokens = self._g2p(text)
        return _WHITESPACE.sub(" ", phonemes).strip()


mandarin_g2p = _OnFirstUse(MandarinG2P)
"""The process's one :class:`MandarinG2P`, created on first use."""


def speaks_mandarin() -> bool:
    """True when misaki's Mandarin G2P and its dictionaries are installed (dependencies of the server)."""
    return all(importlib.util.find_spec(name) is not None for name in ("misaki", "jieba", "pypinyin", "cn2an"))


class LanguageG2P:
    """Text → Kokoro phonemes in any of Kokoro's languages (:data:`relay_core.languages.LANGUAGES`); thread-safe.

    ``default`` reads text in a language of no G2P of its own: the server's ``--lang`` (``en-us`` unless set), used
    for voices whose name names no language and for Latin-script words inside Japanese and Mandarin text. Japanese
    is read as it always was: Japanese runs by misaki on OpenJTalk, the rest by ``default``. Mandarin: runs of hanzi
    by misaki's Mandarin G2P, the rest by ``default``. Every other language is espeak-ng with that language's voice,
    each created on first use (Japanese runs inside them still go to the Japanese G2P)."""

    def __init__(self, default: Phonemizer) -> None:
        self.default = default
        self._espeak: dict[str, Phonemizer] = {default.language.lower(): default}
        self._lock = threading.Lock()

    def __call__(self, text: str, language: Language | None = None) -> str:
        """``text``'s phonemes in ``language`` (None: ``default``); ``""`` for text with nothing speakable."""
        if language is None or language.g2p is G2PKind.JAPANESE:
            return self.default(text)
        if language.g2p is G2PKind.MANDARIN:
            return self._mandarin(text)
        return self.espeak(language.espeak)(text)

    def espeak(self, voice: str) -> Phonemizer:
        """The :class:`Phonemizer` of one espeak-ng voice, created on first use."""
        key = voice.lower()
        with self._lock:
            found = self._espeak.get(key)
            if found is None:
                found = self._espeak[key] = Phonemizer(voice)
            return found

    def _mandarin(self, text: str) -> str:
        return read_runs(text, _HAN_RUN, inside=lambda run: mandarin_g2p()(run), outside=self.default)  # noqa: PLW0108 - lazy


class Tokenizer:
    """Phoneme string → Kokoro token ids; symbols missing from the vocabulary are dropped."""

    MAX_TOKENS = limits.MAX_PHONEME_TOKENS
    """The most tokens one forward pass takes (the context is 512, minus the two padding zeros)."""

    def __init__(self, vocab: Mapping[str, int]) -> None:
        if not vocab:
            raise EngineError("the phoneme vocabulary is empty: load the vocab shipped with the model")
        self.vocab: Mapping[str, int] = MappingProxyType(dict(vocab))

    def __call__(self, phonemes: str) -> list[int]:
        """The ids of the in-vocabulary symbols of ``phonemes``, in order."""
        return [self.vocab[symbol] for symbol in phonemes if symbol in self.vocab]

    def keep(self, phonemes: str) -> str:
        """``phonemes`` without the symbols the vocabulary lacks (what the model actually hears)."""
        return "".join(symbol for symbol in phonemes if symbol in self.vocab)
