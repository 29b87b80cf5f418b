"""espeak-ng G2P mapped onto Kokoro's phoneme set, and the tokenizer."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from kokoro_server.engines import EngineError
from kokoro_server.engines.g2p import Phonemizer, Tokenizer
from kokoro_server.engines.model_files import default_vocab


@pytest.fixture(scope="module")
def english() -> Phonemizer:
    return Phonemizer()


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return Tokenizer(default_vocab())


def test_english_sentence(english: Phonemizer) -> None:
    phonemes = english("Hello, world!")
    assert english.language == "en-us"
    assert phonemes.startswith("h")
    assert "l" in phonemes
    assert "," in phonemes
    assert phonemes.endswith("!")
    assert "ˈ" in phonemes
    assert " " in phonemes


@pytest.mark.parametrize(
    ("word", "symbol"),
    [("say", "A"), ("eye", "I"), ("go", "O"), ("now", "W"), ("boy", "Y"), ("judge", "ʤ"), ("church", "ʧ"),
     ("bird", "ɜɹ"), ("red", "ɹ")],
)  # fmt: skip
def test_american_english_uses_kokoro_symbols(english: Phonemizer, word: str, symbol: str) -> None:
    assert symbol in english(word)


def test_every_symbol_of_english_text_is_in_the_vocab(english: Phonemizer, tokenizer: Tokenizer) -> None:
    text = (
        "The quick brown fox jumps over the lazy dog; however, at 10:30 on May 5th, 2024, Dr. Smith "
        "measured 3.5 kg of judge's cheese — wouldn't you? \"Yes\", (she said)... button, water, bird."
    )
    phonemes = english(text)
    assert "ː" not in phonemes
    assert set(phonemes) <= set(tokenizer.vocab)
    assert tokenizer.keep(phonemes) == phonemes
    assert "θɹˈi" in phonemes


def test_other_languages(tokenizer: Tokenizer) -> None:
    assert "ː" in Phonemizer("en-gb")("bird")
    spanish = Phonemizer("es")("Hola, mucho trabajo.")
    assert "ʧ" in spanish
    assert tokenizer(spanish)
    with pytest.raises(EngineError, match="language"):
        Phonemizer("xx-nowhere")


def test_blank_text(english: Phonemizer) -> None:
    assert english("") == ""
    assert english(" \n\t ") == ""


def test_concurrent_calls_match_sequential_ones(english: Phonemizer) -> None:
    sentences = [f"Sentence number {n} talks about {word}." for n, word in enumerate(["cats", "boats", "rain"] * 8)]
    expected = [english(sentence) for sentence in sentences]
    with ThreadPoolExecutor(max_workers=4) as pool:
        assert list(pool.map(english, sentences)) == expected


def test_tokenizer_maps_and_drops(tokenizer: Tokenizer) -> None:
    vocab = tokenizer.vocab
    assert tokenizer("hə ˈlO.") == [vocab["h"], vocab["ə"], vocab[" "], vocab["ˈ"], vocab["l"], vocab["O"], vocab["."]]
    assert tokenizer("h✓ə") == [vocab["h"], vocab["ə"]]
    assert tokenizer.keep("h✓ə") == "hə"
    assert Tokenizer.MAX_TOKENS == 510
    with pytest.raises(EngineError, match="vocabulary"):
        Tokenizer({})
