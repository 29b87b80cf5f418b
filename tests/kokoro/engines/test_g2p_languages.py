"""Every Kokoro language is read by its own G2P, and what it gives is in the model's vocabulary."""

from __future__ import annotations

import pytest

from kokoro_server.engines.g2p import LanguageG2P, Phonemizer, Tokenizer, speaks_mandarin
from kokoro_server.engines.model_files import default_vocab
from relay_core.languages import BY_CODE, LANGUAGES

SAMPLES = {
    "en-us": "The weather is lovely today, isn't it?",
    "en-gb": "The weather is lovely today, isn't it?",
    "es": "¿Dónde está la estación de tren? Muchas gracias.",
    "fr": "Bonjour, je voudrais un café, s'il vous plaît.",
    "hi": "नमस्ते, आप कैसे हैं? मैं ठीक हूँ।",
    "it": "Buongiorno, vorrei una pizza e un caffè, grazie.",
    "pt-br": "Olá, tudo bem? Eu gostaria de um café, por favor.",
    "ja": "こんにちは、今日はいい天気ですね。",
    "zh": "你好，今天天气很好。我有3个苹果。",
}


@pytest.fixture(scope="module")
def g2p() -> LanguageG2P:
    return LanguageG2P(Phonemizer("en-us"))


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return Tokenizer(default_vocab())


@pytest.mark.parametrize("code", [language.code for language in LANGUAGES])
def test_each_language_gives_phonemes_the_model_has(g2p: LanguageG2P, tokenizer: Tokenizer, code: str) -> None:
    phonemes = g2p(SAMPLES[code], BY_CODE[code])
    kept = tokenizer.keep(phonemes)
    assert len(kept) >= 0.9 * len(phonemes.replace(" ", "")), (phonemes, kept)
    assert len(tokenizer(kept)) > 10


def test_espeak_languages_map_ties_onto_kokoros_single_symbols(g2p: LanguageG2P) -> None:
    italian = g2p("Ciao, pizza.", BY_CODE["it"])
    assert "ʧ" in italian and "ʦ" in italian
    assert "^" not in italian and "-" not in g2p("je m'appelle", BY_CODE["fr"])
    assert "A" in g2p("bem", BY_CODE["pt-br"])  # e^ɪ → A
    assert "θ" in g2p("estación", BY_CODE["es"])


def test_english_voices_are_read_exactly_as_the_default_reads_them(g2p: LanguageG2P) -> None:
    text = SAMPLES["en-us"]
    assert g2p(text, BY_CODE["en-us"]) == g2p(text) == g2p.default(text)
    assert g2p(text, BY_CODE["ja"]) == g2p.default(text), "Latin words in Japanese are read as today"
    assert g2p("bird", BY_CODE["en-gb"]) != g2p("bird", BY_CODE["en-us"])


def test_mandarin_reads_hanzi_with_tones_and_latin_words_in_english(g2p: LanguageG2P) -> None:
    assert speaks_mandarin()
    phonemes = g2p("你好，世界。Hello!", BY_CODE["zh"])
    assert phonemes.startswith("ni↓xau↓")
    assert "həlˈO" in phonemes
    assert "sa→n" in g2p("我有3个苹果。", BY_CODE["zh"]), "digits inside Chinese are read as Chinese numbers"
    assert g2p("你好", BY_CODE["zh"]) != g2p("你好", BY_CODE["ja"]), "hanzi are not read as kanji in Mandarin"
