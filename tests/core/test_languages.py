"""Kokoro's nine languages: one table, one parser for ``lang``, the language of a voice name."""

from __future__ import annotations

import pytest

from relay_core.errors import InvalidFieldError
from relay_core.languages import (
    BY_CODE,
    LANGUAGES,
    G2PKind,
    Script,
    language_of_voice,
    languages_speaking,
    parse_lang,
)
from relay_core.text.segmenter import split_sentences


def test_the_table_has_kokoros_nine_languages_in_its_order() -> None:
    assert "".join(language.letter for language in LANGUAGES) == "abefhipjz"
    assert len({language.code for language in LANGUAGES}) == 9
    assert {language.code: language.g2p for language in LANGUAGES if language.g2p is not G2PKind.ESPEAK} == {
        "ja": G2PKind.JAPANESE,
        "zh": G2PKind.MANDARIN,
    }


@pytest.mark.parametrize(
    ("written", "code"),
    [("en-us", "en-us"), ("EN_GB", "en-gb"), ("a", "en-us"), ("z", "zh"), (" fr-fr ", "fr"), ("en", "en-us"),
     ("pt", "pt-br"), ("cmn", "zh"), ("J", "ja"), ("hi", "hi")],
)  # fmt: skip
def test_lang_is_a_code_a_voice_letter_or_an_alias(written: str, code: str) -> None:
    assert parse_lang(written).code == code


@pytest.mark.parametrize("written", ["", "de", "klingon", "x", "en-au", "zh-tw" * 10])
def test_an_unknown_lang_is_refused_naming_every_code(written: str) -> None:
    with pytest.raises(InvalidFieldError) as caught:
        parse_lang(written, request_id="r1")
    assert "en-us, en-gb, es, fr, hi, it, pt-br, ja, zh" in str(caught.value)
    assert caught.value.request_id == "r1"
    assert len(str(caught.value)) < 200


@pytest.mark.parametrize(
    ("voice", "code"),
    [("af_heart", "en-us"), ("bm_george", "en-gb"), ("ef_dora", "es"), ("ff_siwis", "fr"), ("hf_alpha", "hi"),
     ("im_nicola", "it"), ("pm_alex", "pt-br"), ("jf_alpha", "ja"), ("zf_xiaobei", "zh")],
)  # fmt: skip
def test_a_voice_names_its_language_by_its_first_letter(voice: str, code: str) -> None:
    found = language_of_voice(voice)
    assert found is not None and found.code == code


@pytest.mark.parametrize("voice", ["custom", "xf_alpha", "ax_heart", "af", "afheart", "my_voice"])
def test_a_name_outside_kokoros_pattern_has_no_language(voice: str) -> None:
    assert language_of_voice(voice) is None


def test_the_languages_that_speak_a_script() -> None:
    assert [language.code for language in languages_speaking(Script.DEVANAGARI)] == ["hi"]
    assert [language.code for language in languages_speaking(Script.HAN)] == ["ja", "zh"]
    assert len(languages_speaking(Script.LATIN)) == 9


@pytest.mark.parametrize(
    ("code", "text", "sentences"),
    [
        ("zh", "你好。今天天气很好！你呢？", 3),
        ("ja", "こんにちは。元気ですか？", 2),
        ("hi", "नमस्ते। आप कैसे हैं?", 2),
        ("es", "¿Dónde está? ¡Aquí! Muy bien.", 3),
        ("fr", "Bonjour ! Ça va ? Oui.", 3),
    ],
)
def test_the_segmenter_ends_sentences_as_each_language_writes_them(code: str, text: str, sentences: int) -> None:
    assert code in BY_CODE
    assert len(split_sentences(text)) == sentences, split_sentences(text)
