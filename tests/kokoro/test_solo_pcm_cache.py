"""The session's solo PCM cache (tests/conftest.py ``solo_pcm``) is ``speak_offline``'s PCM for every argument that
changes the audio: voice, speed, language, policy, the text heard before, the first-fragment cut and the engine's
chunk schedule. Each variant is asked for after the cache already holds the plain request's decodes, so a key that
left one of them out would hand back the plain audio (each variant costs one render: what the cache gives for it is
checked to differ from the plain audio, and the plain audio to be ``speak_offline``'s)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from kokoro_server.engines import Engine
from kokoro_server.engines.onnx_synth import OnnxSynthesizer
from kokoro_server.policy import RAW, SpeechPolicy
from kokoro_server.scheduled_speech import speak_offline
from relay_core.speech_options import SpeechOptions

TEXT = "Thanks for waiting and the table is ready. Enjoy."
"""Two sentences (so that streaming every segment differs from streaming the first), the first with a place for a
first-fragment cut (before "and"), short (each variant costs one render of it)."""
PLAIN: dict[str, Any] = {"options": SpeechOptions("jf_alpha")}
VARIANTS: dict[str, dict[str, Any]] = {
    "voice": {"options": SpeechOptions("jm_kumo")},
    "blend": {"options": SpeechOptions("jf_alpha:0.5,jm_kumo:0.5")},
    "speed": {"options": SpeechOptions("jf_alpha", speed=1.3)},
    "lang": {"options": SpeechOptions("jf_alpha", lang="en-gb")},
    "policy": {"options": SpeechOptions("jf_alpha"), "policy": RAW},
    "every": {"options": SpeechOptions("jf_alpha"), "policy": SpeechPolicy(stream_every_segment=True)},
    "previous": {"options": SpeechOptions("jf_alpha"), "previous": "Hello."},
    "first fragment": {"options": SpeechOptions("jf_alpha"), "first_fragment_words": 2},
}


def test_the_cache_gives_speak_offlines_pcm(onnx_engine: Engine, solo_pcm: Callable[..., bytes]) -> None:
    reference = speak_offline(onnx_engine, TEXT, **PLAIN)
    assert solo_pcm(TEXT, **PLAIN) == reference
    assert solo_pcm(TEXT, **PLAIN) == reference, "and again, from the cache"


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_argument_that_changes_the_audio_is_part_of_the_key(solo_pcm: Callable[..., bytes], variant: str) -> None:
    plain = solo_pcm(TEXT, **PLAIN)
    assert solo_pcm(TEXT, **VARIANTS[variant]) != plain, f"the {variant} changes the audio"


def test_the_chunk_schedule_is_part_of_the_key(onnx_engine: Engine, solo_pcm: Callable[..., bytes]) -> None:
    plain = solo_pcm(TEXT, **PLAIN)
    synth = onnx_engine._synthesizer
    assert isinstance(synth, OnnxSynthesizer)
    default = synth.schedule
    synth.schedule = dataclasses.replace(default, first_frames=default.first_frames * 3)
    try:
        changed = solo_pcm(TEXT, **PLAIN)
    finally:
        synth.schedule = default
    assert changed != plain, "the schedule changes the streamed audio"
    assert solo_pcm(TEXT, **PLAIN) == plain
