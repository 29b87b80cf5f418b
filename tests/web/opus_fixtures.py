"""Recorded Opus streams for the client library's decoder tests (tests/web/opus.test.mjs, the browser test).

``python tests/web/opus_fixtures.py`` writes ``tests/web/fixtures/opus_tone.json``: a known PCM signal (a 440 Hz
tone under a slow envelope, a length that is not a whole number of frames), encoded the way the agent encodes a turn
(PyAV's libopus: 24 kHz mono, 20 ms frames, application voip, relay_core.limits.OPUS_BITRATE, raw packets, the
last partial frame padded with silence), cut into ``audio_chunk`` messages of the client wire (docs/client-protocol.md:
``packet_bytes``, ``sample_offset`` and ``samples`` on the PCM timeline, ``pre_skip`` from the encoder), plus the
source PCM and libopus's own decode of the packets trimmed to the PCM timeline (what a correct client hands its
sink). The JS tests compare the library's decode with both.
"""

from __future__ import annotations

import base64
import ctypes
import ctypes.util
import json
import math
import sys
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from relay_core.limits import CHANNELS, OPUS_BITRATE, OPUS_FORMAT, OPUS_FRAME_SAMPLES, SAMPLE_RATE
from relay_core.packet_timeline import PacketTimeline

FIXTURE = Path(__file__).parent / "fixtures" / "opus_tone.json"
TURN_ID = "t-opusfixture00000000001"
TOTAL_SAMPLES = 11_111
"""The tone's length: not a multiple of the frame, so the stream's end is padded and trimmed."""
PACKETS_PER_CHUNK = (1, 3, 2, 7, 4, 100)
"""How many packets each audio_chunk carries (the relay re-chunks freely; the last takes the rest)."""


def tone() -> np.ndarray:
    """The source signal: int16 PCM, 440 Hz, half scale, under a slow envelope (so a misaligned decode fails)."""
    t = np.arange(TOTAL_SAMPLES) / SAMPLE_RATE
    envelope = 0.5 + 0.5 * np.sin(2 * math.pi * 3.0 * t)
    return np.round(0.5 * 32767 * envelope * np.sin(2 * math.pi * 440.0 * t)).astype(np.int16)


def encode(pcm: np.ndarray) -> tuple[list[bytes], int]:
    """Raw Opus packets of ``pcm`` (one encoder, 20 ms frames, the tail padded with silence) and the pre-skip."""
    codec = av.CodecContext.create("libopus", "w")
    codec.sample_rate = SAMPLE_RATE
    codec.layout = "mono"
    codec.format = "s16"
    codec.bit_rate = OPUS_BITRATE
    codec.time_base = Fraction(1, SAMPLE_RATE)
    codec.options = {"application": "voip", "frame_duration": "20"}
    codec.open()
    frames = math.ceil(len(pcm) / OPUS_FRAME_SAMPLES)
    padded = np.zeros(frames * OPUS_FRAME_SAMPLES, dtype=np.int16)
    padded[: len(pcm)] = pcm
    packets: list[bytes] = []
    for i in range(frames):
        frame = av.AudioFrame.from_ndarray(
            padded[i * OPUS_FRAME_SAMPLES : (i + 1) * OPUS_FRAME_SAMPLES].reshape(1, -1), format="s16", layout="mono"
        )
        frame.sample_rate = SAMPLE_RATE
        frame.pts = i * OPUS_FRAME_SAMPLES
        packets += [bytes(p) for p in codec.encode(frame)]
    packets += [bytes(p) for p in codec.encode(None)]
    return packets, int(codec.initial_padding)


def libopus() -> ctypes.CDLL:
    """The system's libopus (libopus0, which PyAV's FFmpeg uses too): its decoder runs at 24 kHz, FFmpeg's at 48."""
    name = ctypes.util.find_library("opus")
    if name is None:
        raise RuntimeError("libopus is not installed: apt-get install libopus0")
    lib = ctypes.CDLL(name)
    lib.opus_decoder_create.restype = ctypes.c_void_p
    lib.opus_decoder_create.argtypes = [ctypes.c_int32, ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
    lib.opus_decode.argtypes = [
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.c_int32,
        ctypes.c_void_p,
        ctypes.c_int,
        ctypes.c_int,
    ]
    lib.opus_decoder_destroy.argtypes = [ctypes.c_void_p]
    return lib


def decode(packets: list[bytes]) -> np.ndarray:
    """libopus's decode of the raw packets at 24 kHz (int16, nothing trimmed): the reference for the JS decoders."""
    lib = libopus()
    error = ctypes.c_int(0)
    decoder = lib.opus_decoder_create(SAMPLE_RATE, CHANNELS, ctypes.byref(error))
    if error.value != 0:
        raise RuntimeError(f"opus_decoder_create failed ({error.value})")
    try:
        out: list[np.ndarray] = []
        for data in packets:
            pcm = np.zeros(OPUS_FRAME_SAMPLES * 6, dtype=np.int16)
            n = lib.opus_decode(decoder, data, len(data), pcm.ctypes.data, len(pcm), 0)
            if n < 0:
                raise RuntimeError(f"opus_decode failed ({n})")
            out.append(pcm[:n].copy())
        return np.concatenate(out)
    finally:
        lib.opus_decoder_destroy(decoder)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def fixture() -> dict[str, object]:
    """The fixture: the wire messages of one Opus turn, the source PCM and the expected PCM per chunk."""
    pcm = tone()
    packets, pre_skip = encode(pcm)
    decoded = decode(packets)
    assert len(decoded) == len(packets) * OPUS_FRAME_SAMPLES, "libopus decodes every packet to one 20 ms frame"
    timeline = decoded[pre_skip : pre_skip + TOTAL_SAMPLES]
    messages: list[dict[str, object]] = [
        {"type": "agent_start", "turn_id": TURN_ID, "seq": 0, "mode": "bidi", "model": "fixture"},
        {
            "type": "audio_stream_start",
            "turn_id": TURN_ID,
            "seq": 1,
            "voice": "af_heart",
            "format": OPUS_FORMAT,
            "sample_rate": SAMPLE_RATE,
            "channels": CHANNELS,
            "frame_samples": OPUS_FRAME_SAMPLES,
            "pre_skip": pre_skip,
        },
    ]
    expected: list[str] = []
    timeline_of_packets = PacketTimeline(pre_skip=pre_skip, frame_samples=OPUS_FRAME_SAMPLES)
    first = 0
    sizes = list(PACKETS_PER_CHUNK)
    while first < len(packets):
        count = sizes.pop(0) if sizes else len(packets)
        group = packets[first : first + count]
        start, samples = timeline_of_packets.place(len(group), limit=TOTAL_SAMPLES)
        stop = start + samples
        messages.append(
            {
                "type": "audio_chunk",
                "turn_id": TURN_ID,
                "seq": len(messages),
                "data": b64(b"".join(group)),
                "packet_bytes": [len(p) for p in group],
                "sample_offset": start,
                "samples": samples,
            }
        )
        expected.append(b64(timeline[start:stop].astype("<i2").tobytes()))
        first += len(group)
    messages.append(
        {
            "type": "audio_stream_end",
            "turn_id": TURN_ID,
            "seq": len(messages),
            "total_samples": TOTAL_SAMPLES,
            "duration_s": TOTAL_SAMPLES / SAMPLE_RATE,
        }
    )
    messages.append({"type": "agent_end", "turn_id": TURN_ID, "seq": len(messages), "status": "completed"})
    return {
        "description": "tests/web/opus_fixtures.py: a 440 Hz tone as one Opus turn on the client wire",
        "turn_id": TURN_ID,
        "pre_skip": pre_skip,
        "total_samples": TOTAL_SAMPLES,
        "packets": len(packets),
        "source_pcm": b64(pcm.astype("<i2").tobytes()),
        "expected_pcm": expected,
        "messages": [json.dumps(m) for m in messages],
    }


def main() -> None:
    """Write the fixture (run from the repo root with the venv's Python)."""
    FIXTURE.write_text(json.dumps(fixture(), indent=1) + "\n")
    print(f"wrote {FIXTURE}", file=sys.stderr)


if __name__ == "__main__":
    main()
