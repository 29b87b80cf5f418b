"""Japanese text is spoken with the Japanese G2P (misaki on OpenJTalk, offline), not read as "Japanese letter"."""

from __future__ import annotations

import pytest
from misaki.ja import M2P

from kokoro_server.engines.g2p import JAPANESE_REWRITES, Phonemizer, Tokenizer, speaks_japanese
from kokoro_server.engines.model_files import default_vocab

ESPEAK_LETTER_NAME = "ʤˈæpənizlˌɛɾɚ"
"""What espeak-ng en-us says for every Japanese character ("Japanese letter")."""


@pytest.fixture(scope="module")
def phonemizer() -> Phonemizer:
    return Phonemizer("en-us")


def test_japanese_runs_go_to_the_japanese_g2p(phonemizer: Phonemizer) -> None:
    assert speaks_japanese()
    assert phonemizer("こんにちは、元気ですか。") == "koɴniʨiwa, ɡeɴkidesuka."
    mixed = phonemizer("He said こんにちは to me.")
    assert "koɴniʨiwa" in mixed
    assert mixed.startswith("hi sˈɛd")
    numbers = phonemizer("東京タワーは333メートルです。")
    assert "saɴbʲaku" in numbers and "kʲoː" in numbers  # digits inside Japanese are read in Japanese
    assert ESPEAK_LETTER_NAME not in phonemizer("カタカナ と ひらがな と 漢字")


def test_every_japanese_phoneme_is_in_the_model_vocabulary(phonemizer: Phonemizer) -> None:
    tokenizer = Tokenizer(default_vocab())
    for kana, written in M2P.items():
        phonemes = written
        for source, target in JAPANESE_REWRITES:
            phonemes = phonemes.replace(source, target)
        assert tokenizer.keep(phonemes) == phonemes, (kana, phonemes)
    sample = phonemizer("ギャラリーでミュージックを聴き、チョコレートとティーを楽しむ。")
    assert tokenizer.keep(sample) == sample
