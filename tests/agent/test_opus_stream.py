"""OpusStream (libopus through PyAV) and AgentTurn encoding a turn's PCM as one Opus stream."""

from __future__ import annotations

import array
import math
import struct

import pytest

from relay_cli.opus_decode import decode_opus_turn
from relay_core import limits
from relay_core.agent.events import AgentEvent, AudioChunk, AudioStreamEnd, AudioStreamStart
from relay_core.agent.turn import AgentTurn
from relay_core.errors import AudioFormatError, SessionStateError
from voice_agent.opus_stream import OpusStream


def voiced(n_samples: int, start: int = 0) -> bytes:
    """A speech-like test signal: a 180 Hz tone with harmonics, slowly amplitude-modulated (s16le)."""
    out = []
    for i in range(start, start + n_samples):
        t = i / limits.SAMPLE_RATE
        value = sum(math.sin(2 * math.pi * 180 * k * t) / k for k in (1, 2, 3)) * (0.6 + 0.4 * math.sin(6 * t))
        out.append(struct.pack("<h", round(7000 * value)))
    return b"".join(out)


def correlation(a: bytes, b: bytes, *, max_lag: int = 10, step: int = 3) -> float:
    """The best normalized correlation of two equally long s16le signals within ``max_lag`` samples of each other
    (a lossy codec's decode path may sit a fraction of a millisecond off the input: libopus decodes at 48 kHz)."""
    x, y = array.array("h", a), array.array("h", b)
    assert len(x) == len(y)
    best = -1.0
    for lag in range(-max_lag, max_lag + 1):
        idx = range(max_lag, len(x) - max_lag, step)
        num = sum(x[i] * y[i + lag] for i in idx)
        den = math.sqrt(sum(x[i] * x[i] for i in idx) * sum(y[i + lag] * y[i + lag] for i in idx)) or 1.0
        best = max(best, num / den)
    return best


def test_a_packet_comes_out_as_soon_as_its_frame_is_complete_and_flush_pads_the_rest() -> None:
    stream = OpusStream()
    assert stream.frame_samples == 480 and stream.pre_skip > 0
    pcm = voiced(1000)
    assert stream.encode(pcm[: 479 * 2]) == []  # not a whole frame yet: nothing waits but the frame itself
    assert len(stream.encode(pcm[479 * 2 : 480 * 2])) == 1  # its last sample completes it: out at once
    assert len(stream.encode(pcm[480 * 2 :])) == 1  # 520 more samples: one more frame, 40 samples wait
    tail = stream.flush()
    assert len(tail) >= 1 and stream.flush() == []
    with pytest.raises(SessionStateError):
        stream.encode(pcm)


def test_half_a_sample_is_refused() -> None:
    with pytest.raises(AudioFormatError):
        OpusStream().encode(b"\x01")


def test_an_agent_turn_encodes_every_piece_into_one_stream_that_decodes_back_to_its_pcm() -> None:
    turn = AgentTurn("r-1", audio_chunk_bytes=4800, encoder=OpusStream())
    turn.start()
    sizes = [2400, 333, 7201, 50, 4000]
    pcm = b""
    events: list[AgentEvent] = []
    for size in sizes:
        piece = voiced(size, start=len(pcm) // 2)
        pcm += piece
        events += turn.audio(piece, "af_heart")
    events += turn.finish()
    (start,) = [e for e in events if isinstance(e, AudioStreamStart)]
    assert (start.format, start.frame_samples, start.pre_skip) == ("opus", 480, OpusStream().pre_skip)
    chunks = [e for e in events if isinstance(e, AudioChunk)]
    assert [c.seq for c in chunks] == list(range(len(chunks)))
    total = len(pcm) // 2
    assert sum(c.samples or 0 for c in chunks) == total
    (end,) = [e for e in events if isinstance(e, AudioStreamEnd)]
    assert end.total_chunks == len(chunks)
    packets = [p for c in chunks for p in c.packets()]
    assert len(packets) * 480 >= total + (start.pre_skip or 0)  # flushed: every sample is in some packet
    decoded = decode_opus_turn(packets, pre_skip=start.pre_skip or 0, total_samples=total)
    assert len(decoded) == len(pcm)
    assert correlation(decoded[4800:-4800], pcm[4800:-4800]) > 0.9  # lossy, but the same sound, in step
