"""The server's numpy float → s16le conversion equals relay_core's stdlib reference, bit for bit."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from kokoro_server.pcm import float_to_pcm16
from relay_core.audio import float_to_pcm16 as reference

EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 1e-9, 0.99999, -0.99999, math.inf, -math.inf, math.nan]
HALF_STEPS = [(k + 0.5) / 32767 for k in range(-40, 40)]


def test_edges_and_exact_halves_match_the_reference() -> None:
    values = EDGES + HALF_STEPS
    assert float_to_pcm16(np.array(values, dtype=np.float64)) == reference(values)
    as32 = np.array(values, dtype=np.float32)
    assert float_to_pcm16(as32) == reference([float(x) for x in as32])


@given(st.lists(st.floats(width=32, allow_nan=True, allow_infinity=True), max_size=300))
def test_float32_audio_matches_the_reference(values: list[float]) -> None:
    audio = np.array(values, dtype=np.float32)
    assert float_to_pcm16(audio) == reference([float(x) for x in audio])


@given(st.lists(st.floats(min_value=-2, max_value=2), max_size=300))
def test_float64_audio_matches_the_reference(values: list[float]) -> None:
    assert float_to_pcm16(np.array(values, dtype=np.float64)) == reference(values)


def test_output_is_little_endian_s16() -> None:
    pcm = float_to_pcm16(np.array([1.0, -1.0, 0.0], dtype=np.float32))
    assert pcm == (32767).to_bytes(2, "little", signed=True) + (-32767).to_bytes(2, "little", signed=True) + b"\0\0"
