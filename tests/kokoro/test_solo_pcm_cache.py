"""The session's solo PCM cache (tests/conftest.py ``solo_pcm``) is ``speak_offline``'s PCM for every argument that
changes the audio: voice, speed, language, policy, the text heard before, the first-fragment cut and the engine's
chunk schedule. Each variant is asked for after the cache already holds the plain request's decodes, so a key that
left one of them out would hand back the plain audio (each variant costs one render: what the cache gives for it is
checked to differ from the plain audio, and the plain audio to be ``speak_offline``'s)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from kokoro_server.engines import Engine
from kokoro_server.engines.onnx_synth import OnnxSynthesizer
from kokoro_server.policy import RAW, SpeechPolicy
from kokoro_server.scheduled_speech import speak_offline
from relay_core.speech_options import SpeechOptions

if TYPE_CHECKING:
    from tests.conftest import SoloPcm

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


def test_its_decodes_are_the_engines_and_each_is_a_copy(onnx_engine: Engine, solo_pcm: SoloPcm) -> None:
    """``solo_pcm.decodes`` (the decodes the references are made of, for tests that check one decode against
    another) gives the engine's own streamed and whole decodes, each time a copy a test may change."""
    segment = onnx_engine.plan(TEXT, voice="jf_alpha", speed=1.0)[-1]  # "Enjoy.": short, each decode costs little
    fresh = onnx_engine.render_stream(segment, voice="jf_alpha", speed=1.0)
    fresh_chunks = list(fresh.chunks)
    for _ in range(2):
        streamed = solo_pcm.decodes.render_stream(segment, voice="jf_alpha", speed=1.0)
        chunks = list(streamed.chunks)
        assert streamed.durations == fresh.durations
        assert len(chunks) == len(fresh_chunks)
        for chunk, expected in zip(chunks, fresh_chunks, strict=True):
            np.testing.assert_array_equal(chunk, expected)
            chunk[:] = 0.0
    whole = onnx_engine.render_timed(segment, voice="jf_alpha", speed=1.0)
    for _ in range(2):
        cached = solo_pcm.decodes.render_timed(segment, voice="jf_alpha", speed=1.0)
        np.testing.assert_array_equal(cached.audio, whole.audio)
        assert cached.durations == whole.durations
        cached.audio[:] = 0.0


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
