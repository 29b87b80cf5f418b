"""Audio helpers shared by every part: sample conversion, WAV headers, chunking, base64 framing.

All PCM in the relay is s16le, 24 kHz, mono unless a function says otherwise. Chunking always cuts on sample
boundaries so that any chunk can be played on its own.
"""

from __future__ import annotations

import base64
import binascii
import struct
import sys
from array import array
from collections.abc import Iterator, Sequence

from relay_core import limits
from relay_core.errors import AudioFormatError

STREAMING_SIZE = 0xFFFFFFFF
"""RIFF and data sizes written when the length is not known in advance (streaming WAV)."""
WAV_HEADER_BYTES = 44


def float_to_pcm16(samples: Sequence[float] | memoryview) -> bytes:
    """Float samples in [-1, 1] (clipped) to s16le bytes. For numpy arrays prefer the engine's vectorised path;
    this stdlib version exists so relay_core needs no numpy."""
    out = array("h", (round(max(-1.0, min(1.0, float(x))) * 32767) for x in samples))
    if out.itemsize != 2:  # pragma: no cover - every CPython platform has 2-byte shorts
        raise AudioFormatError("this platform's short is not 2 bytes")
    if sys.byteorder == "big":  # pragma: no cover - little-endian on every supported host
        out.byteswap()
    return out.tobytes()


def pcm_duration_s(n_bytes: int, *, sample_rate: int = limits.SAMPLE_RATE) -> float:
    """Seconds of audio in ``n_bytes`` of s16le mono."""
    return n_bytes / (limits.SAMPLE_WIDTH_BYTES * sample_rate)


def wav_header(
    data_bytes: int | None = None, *, sample_rate: int = limits.SAMPLE_RATE, channels: int = limits.CHANNELS
) -> bytes:
    """A 44-byte PCM WAV header. ``data_bytes=None`` writes 0xFFFFFFFF sizes for a stream of unknown length,
    which browsers, ffmpeg and SoX play to the end of the stream."""
    block_align = channels * limits.SAMPLE_WIDTH_BYTES
    if data_bytes is None:
        riff_size = data_size = STREAMING_SIZE
    else:
        if data_bytes < 0 or data_bytes % block_align:
            raise AudioFormatError(f"WAV data must be whole frames of {block_align} bytes; got {data_bytes}")
        data_size = data_bytes
        riff_size = 36 + data_bytes
    return struct.pack(
        "<4sI4s4sIHHIIHH4sI",
        b"RIFF",
        riff_size,
        b"WAVE",
        b"fmt ",
        16,
        1,
        channels,
        sample_rate,
        sample_rate * block_align,
        block_align,
        8 * limits.SAMPLE_WIDTH_BYTES,
        b"data",
        data_size,
    )


def wav_bytes(pcm: bytes, *, sample_rate: int = limits.SAMPLE_RATE) -> bytes:
    """A complete WAV file for ``pcm`` (s16le mono)."""
    return wav_header(len(pcm), sample_rate=sample_rate) + pcm


def chunk_pcm(pcm: bytes, max_bytes: int, *, frame_bytes: int = limits.SAMPLE_WIDTH_BYTES) -> Iterator[bytes]:
    """Split PCM into chunks of at most ``max_bytes``, each a whole number of frames; joins back to ``pcm``."""
    if len(pcm) % frame_bytes:
        raise AudioFormatError(f"PCM length {len(pcm)} is not a whole number of {frame_bytes}-byte frames")
    step = max_bytes - (max_bytes % frame_bytes)
    if step <= 0:
        raise ValueError(f"max_bytes must be at least one frame ({frame_bytes} bytes); got {max_bytes}")
    for start in range(0, len(pcm), step):
        yield pcm[start : start + step]


def max_pcm_bytes_for_base64(budget_bytes: int, *, overhead_bytes: int) -> int:
    """The largest PCM chunk (whole samples) whose base64 text plus ``overhead_bytes`` of JSON fits the budget."""
    room = budget_bytes - overhead_bytes
    if room < 4:
        raise ValueError(f"a budget of {budget_bytes} bytes leaves no room after {overhead_bytes} bytes of overhead")
    raw = (room // 4) * 3
    return raw - (raw % limits.SAMPLE_WIDTH_BYTES)


def b64encode(data: bytes) -> str:
    """Base64 text for a JSON field."""
    return base64.b64encode(data).decode("ascii")


def b64decode(text: str) -> bytes:
    """Bytes from a base64 JSON field; raises ``AudioFormatError`` with a clear message when malformed."""
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise AudioFormatError(f"audio data is not valid base64: {exc}") from exc
