"""What each voice is (language, gender), and OpenAI's voice names mapped onto the configured voices.

Kokoro voice packs are named ``<language><gender>_<name>``: ``jf_alpha`` is a Japanese female voice, ``jm_kumo`` a
Japanese male one. A voice pack gives the timbre; what is said, and how, comes from the G2P of the request's language:
the voice's own (:mod:`relay_core.languages`) unless the request names another ``lang``. The embedded voices are
Japanese packs: Japanese text goes through the Japanese G2P and Latin-script words through the server's espeak-ng
language (``en-us`` by default), so they speak English with a Japanese-trained timbre; with the official packs
installed, English is read by English voices. ``GET /v1/audio/voices`` says so for each voice.

OpenAI's names are accepted by ``/v1/audio/speech`` (only there; the session protocol takes voice names and blends):
its female-sounding voices map, in order, onto the configured female voices, its male-sounding ones onto the male
voices, cycling when there are fewer; a name that is also a configured voice keeps its own meaning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from relay_core.languages import language_of_voice

GENDERS = {"f": "female", "m": "male"}

OPENAI_FEMALE = ("alloy", "coral", "nova", "sage", "shimmer")
OPENAI_MALE = ("ash", "ballad", "echo", "fable", "onyx", "verse")
OPENAI_VOICES = (*OPENAI_FEMALE, *OPENAI_MALE)


@dataclass(frozen=True, slots=True)
class VoiceInfo:
    """One configured voice as ``GET /v1/audio/voices`` describes it."""

    name: str
    language: str
    """The language the voice pack was trained on (from its name), or "unknown"."""
    gender: str
    """female, male, or unknown."""
    speaks: str
    """The language code its requests are read in unless they say ``lang``: its own (``ja``), or for a voice of
    no known language the server's ``--lang``."""
    official: bool = False
    """An official Kokoro v1.0 pack, bit for bit (else a pack of the user's own)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "language": self.language,
            "gender": self.gender,
            "speaks": self.speaks,
            "official": self.official,
            "description": f"{self.language} {self.gender} voice pack; its text is read as {self.speaks} unless a "
            "request names another 'lang'",
        }


def describe(name: str, *, g2p_lang: str, official: bool = False) -> VoiceInfo:
    """The language and gender a voice's name encodes (``jf_alpha``: Japanese, female); ``g2p_lang`` is the
    server's default G2P language, which voices of no known language speak."""
    language = language_of_voice(name)
    gender = GENDERS.get(name[1:2], "unknown") if language is not None else "unknown"
    return VoiceInfo(
        name=name,
        language=language.name if language is not None else "unknown",
        gender=gender,
        speaks=language.code if language is not None else g2p_lang,
        official=official,
    )


def openai_voice_map(voices: list[str], *, default_voice: str) -> dict[str, str]:
    """OpenAI voice name → configured voice. With no voice of a gender, that gender's names map to the default."""

    def of_gender(letter: str) -> list[str]:
        return sorted(v for v in voices if len(v) > 2 and v[1] == letter and v[2] == "_")

    mapping: dict[str, str] = {}
    for names, letter in ((OPENAI_FEMALE, "f"), (OPENAI_MALE, "m")):
        pool = of_gender(letter) or [default_voice]
        for index, alias in enumerate(names):
            mapping[alias] = pool[index % len(pool)]
    return mapping


def resolve_openai_voice(voice: str | None, voices: list[str], *, default_voice: str) -> str | None:
    """The configured voice for an OpenAI request's ``voice``: its own name, an OpenAI name's mapping, or as given
    (a blend, or an unknown name the engine then refuses with the list of voices)."""
    if voice is None or voice in voices:
        return voice
    return openai_voice_map(voices, default_voice=default_voice).get(voice.strip().lower(), voice)
