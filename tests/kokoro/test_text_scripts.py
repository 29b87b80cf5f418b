"""Which letters the G2P language can speak, and what each voice is: plain functions, no model."""

from __future__ import annotations

import pytest

from kokoro_server.text_scripts import JAPANESE_SCRIPTS, check_speakable, foreign_script
from kokoro_server.voice_catalog import describe, openai_voice_map, resolve_openai_voice
from relay_core.errors import ProtocolError
from relay_core.languages import BY_CODE


@pytest.mark.parametrize("text", ["Hello there.", "naïve façade, São Paulo, Øresund", "½ €5 — 3°C, 1ª", "x² + 2 = ∞ !"])
def test_latin_text_digits_and_symbols_are_speakable(text: str) -> None:
    assert foreign_script(text, "en-us") is None


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Say こんにちは please", "Japanese"),
        ("カタカナ", "Japanese"),
        ("日本語", "Chinese or Japanese"),
        ("привет", "Russian"),
        ("γεια", "Greek"),
        ("مرحبا", "Arabic"),
        ("ｈｅｌｌｏ", "fullwidth"),
    ],
)
def test_other_scripts_are_found_on_a_latin_g2p(text: str, language: str) -> None:
    found = foreign_script(text, "en-us", japanese=False)
    assert found is not None
    assert language in found.language
    japanese = found.script in JAPANESE_SCRIPTS
    assert (foreign_script(text, "en-us", japanese=True) is None) == japanese
    if not japanese:
        with pytest.raises(ProtocolError) as refused:
            check_speakable(text, "en-gb", request_id="r")
        assert refused.value.code == "unsupported_text"
        assert refused.value.request_id == "r"
        assert "en-gb" in refused.value.message


def test_japanese_is_speakable_here_because_its_g2p_is_installed() -> None:
    check_speakable("こんにちは、元気ですか。東京タワー", "en-us")


def test_a_g2p_of_another_script_is_not_second_guessed() -> None:
    assert foreign_script("こんにちは", "ja") is None


def test_voices_are_described_by_their_names() -> None:
    alpha = describe("jf_alpha", g2p_lang="en-us")
    assert (alpha.language, alpha.gender, alpha.speaks) == ("Japanese", "female", "ja")
    adam = describe("am_adam", g2p_lang="en-gb")
    assert (adam.language, adam.gender, adam.speaks) == ("American English", "male", "en-us")
    custom = describe("custom", g2p_lang="en-gb")
    assert (custom.language, custom.gender, custom.speaks) == ("unknown", "unknown", "en-gb")


def test_openai_names_map_by_gender_and_fall_back_to_the_default() -> None:
    voices = ["jf_alpha", "jf_nezumi", "jm_kumo"]
    mapping = openai_voice_map(voices, default_voice="jf_alpha")
    assert mapping["alloy"] == "jf_alpha" and mapping["coral"] == "jf_nezumi" and mapping["nova"] == "jf_alpha"
    assert mapping["onyx"] == "jm_kumo" and mapping["echo"] == "jm_kumo"
    assert openai_voice_map(["jf_alpha"], default_voice="jf_alpha")["onyx"] == "jf_alpha"
    assert resolve_openai_voice("Alloy", voices, default_voice="jf_alpha") == "jf_alpha"
    assert resolve_openai_voice("jm_kumo", voices, default_voice="jf_alpha") == "jm_kumo"
    assert resolve_openai_voice("jf_alpha:0.5,jm_kumo:0.5", voices, default_voice="jf_alpha") == (
        "jf_alpha:0.5,jm_kumo:0.5"
    )
    assert resolve_openai_voice(None, voices, default_voice="jf_alpha") is None


def test_a_request_language_speaks_latin_and_its_own_script() -> None:
    hindi = "नमस्ते, आप कैसे हैं?"
    assert foreign_script(hindi, "en-us", language=BY_CODE["hi"]) is None
    assert foreign_script("Namaste, hello", "en-us", language=BY_CODE["hi"]) is None
    assert foreign_script("你好", "en-us", language=BY_CODE["zh"], japanese=False) is None
    found = foreign_script(hindi, "en-us", language=BY_CODE["es"])
    assert found is not None and found.script == "DEVANAGARI"
    assert foreign_script("привет", "en-us", language=BY_CODE["zh"]) is not None


def test_the_refusal_names_the_languages_that_speak_the_script() -> None:
    with pytest.raises(ProtocolError) as refused:
        check_speakable("Hola नमस्ते", "en-us", language=BY_CODE["es"], request_id="r")
    assert refused.value.code == "unsupported_text" and refused.value.request_id == "r"
    assert "Spanish (es)" in refused.value.message and "'hi' (Hindi)" in refused.value.message
    with pytest.raises(ProtocolError) as cyrillic:
        check_speakable("привет", "en-us", language=BY_CODE["fr"])
    assert "none of Kokoro's languages speaks Russian" in cyrillic.value.message
