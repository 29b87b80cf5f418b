"""How a voice is spelled (relay_core.voice_spec): names and weighted blends, and every misspelling refused."""

from __future__ import annotations

import pytest

from relay_core.errors import InvalidFieldError
from relay_core.voice_spec import VoiceEntry, parse_voice_spec


@pytest.mark.parametrize(
    ("spec", "entries"),
    [
        ("jf_alpha", (VoiceEntry("jf_alpha", 1.0),)),
        ("jf_alpha:0.7,jm_kumo:0.3", (VoiceEntry("jf_alpha", 0.7), VoiceEntry("jm_kumo", 0.3))),
        (" jf_alpha + jm_kumo:2 ", (VoiceEntry("jf_alpha", 1.0), VoiceEntry("jm_kumo", 2.0))),
    ],
)
def test_names_and_blends(spec: str, entries: tuple[VoiceEntry, ...]) -> None:
    assert parse_voice_spec(spec) == entries


@pytest.mark.parametrize(
    "spec",
    ["", " ", "jf_alpha,", ",jm_kumo", "jf_alpha,,jm_kumo", "jf_alpha:-1", "jf_alpha:0", "jf_alpha:x", "jf_alpha:",
     "jf_alpha:nan", "jf_alpha:inf", ":0.5"],
)  # fmt: skip
def test_every_misspelling_is_refused_saying_how_to_write_it(spec: str) -> None:
    with pytest.raises(InvalidFieldError, match=r"jf_alpha:0\.7,jm_kumo:0\.3"):
        parse_voice_spec(spec)
