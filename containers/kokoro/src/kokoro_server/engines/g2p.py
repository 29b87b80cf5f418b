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
from collections.abc import Mapping
from types import MappingProxyType

import espeakng_loader
from phonemizer.backend import EspeakBackend
from phonemizer.backend.espeak.wrapper import EspeakWrapper

from kokoro_server.engines.errors import EngineError
from relay_core import limits

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


def _rewrites_for(language: str) -> tuple[tuple[str, str], ...]:
    lang = language.lower()
    rules = _COMMON_REWRITES
    if lang.startswith("en"):
        if lang in {"en", "en-us"}:
            rules = _AMERICAN_REWRITES + rules
        rules = rules + _ENGLISH_REWRITES
    return rules


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
                    tie=False,
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
        clean = _WHITESPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()
        if not clean:
            return ""
        pieces: list[str] = []
        position = 0
        for run in _JAPANESE_RUN.finditer(clean):
            pieces.append(self._espeak(clean[position : run.start()]))
            pieces.append(japanese_g2p()(run.group()))
            position = run.end()
        pieces.append(self._espeak(clean[position:]))
        return " ".join(piece for piece in pieces if piece)

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


_JAPANESE: list[JapaneseG2P] = []
_JAPANESE_LOCK = threading.Lock()


def japanese_g2p() -> JapaneseG2P:
    """The process's one :class:`JapaneseG2P`, created on first use."""
    with _JAPANESE_LOCK:
        if not _JAPANESE:
            _JAPANESE.append(JapaneseG2P())
        return _JAPANESE[0]


def speaks_japanese() -> bool:
    """True when the Japanese G2P is installed (it is a dependency of the server; an install without it refuses
    Japanese text instead of reading letter names)."""
    return all(importlib.util.find_spec(name) is not None for name in ("misaki", "pyopenjtalk"))


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
