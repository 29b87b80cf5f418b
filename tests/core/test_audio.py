"""Audio helpers: sample conversion, WAV headers, chunking on sample boundaries, base64."""

from __future__ import annotations

import io
import struct
import wave

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relay_core import audio
from relay_core.errors import AudioFormatError


def test_float_to_pcm16_clips_and_rounds() -> None:
    pcm = audio.float_to_pcm16([0.0, 1.0, -1.0, 2.0, -3.0, 0.5])
    assert struct.unpack("<6h", pcm) == (0, 32767, -32767, 32767, -32767, 16384)


def test_complete_wav_is_readable_by_the_stdlib() -> None:
    pcm = audio.float_to_pcm16([0.1, -0.1] * 100)
    with wave.open(io.BytesIO(audio.wav_bytes(pcm))) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth(), w.getnframes()) == (24000, 1, 2, 200)
        assert w.readframes(200) == pcm


def test_streaming_wav_header_uses_max_sizes() -> None:
    header = audio.wav_header()
    assert len(header) == audio.WAV_HEADER_BYTES
    riff_size, data_size = struct.unpack_from("<I", header, 4)[0], struct.unpack_from("<I", header, 40)[0]
    assert riff_size == data_size == 0xFFFFFFFF
    with pytest.raises(AudioFormatError):
        audio.wav_header(3)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 5000).map(lambda n: bytes(range(256)) * (n // 256) + bytes(n % 256)), st.integers(2, 999))
def test_chunk_pcm_cuts_on_sample_boundaries_and_loses_nothing(raw: bytes, limit: int) -> None:
    pcm = raw[: len(raw) - len(raw) % 2]
    chunks = list(audio.chunk_pcm(pcm, limit))
    assert b"".join(chunks) == pcm
    assert all(0 < len(c) <= limit and len(c) % 2 == 0 for c in chunks)


def test_chunk_pcm_rejects_partial_samples_and_tiny_limits() -> None:
    with pytest.raises(AudioFormatError):
        list(audio.chunk_pcm(b"\x00", 10))
    with pytest.raises(ValueError, match="at least one frame"):
        list(audio.chunk_pcm(b"\x00\x00", 1))


def test_base64_budget_fits_and_round_trips() -> None:
    n = audio.max_pcm_bytes_for_base64(32 * 1024, overhead_bytes=200)
    assert n % 2 == 0
    assert len(audio.b64encode(b"\x00" * n)) + 200 <= 32 * 1024
    assert len(audio.b64encode(b"\x00" * (n + 4))) + 200 > 32 * 1024 - 8
    assert audio.b64decode(audio.b64encode(b"abc\x00")) == b"abc\x00"
    with pytest.raises(AudioFormatError):
        audio.b64decode("not base64!")


def test_duration() -> None:
    assert audio.pcm_duration_s(48000) == 1.0
