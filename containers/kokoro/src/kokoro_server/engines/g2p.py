"""Grapheme-to-phoneme front end: text → Kokoro phonemes → token ids.

espeak-ng (through ``phonemizer-fork``, with the library and data shipped by ``espeakng-loader``, so
it works offline) turns text into IPA; :class:`Phonemizer` rewrites that IPA into the symbols Kokoro
was trained on, and :class:`Tokenizer` maps them to vocabulary ids.
"""

from __future__ import annotations

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
        """Phonemize ``text``; returns ``""`` for text without anything speakable."""
        clean = _WHITESPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()
        if not clean:
            return ""
        with _ESPEAK_LOCK:
            ipa = self._backend.phonemize([clean], strip=True)[0]
        return self.rewrite(ipa)

    def rewrite(self, ipa: str) -> str:
        """Map espeak IPA onto Kokoro's symbols (syllabic consonants get a leading ``ᵊ``)."""
        phonemes = _SYLLABIC.sub(r"ᵊ\1", ipa)
        for source, target in self._rewrites:
            phonemes = phonemes.replace(source, target)
        return _WHITESPACE.sub(" ", phonemes).strip()


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
