"""One turn's Opus encoder (docs/agent.md, "Opus to clients"): the turn's PCM in, raw Opus packets out.

A client that asks for ``audio: "opus"`` gets its turn's speech as ONE continuous Opus stream, whatever the
number of TTS requests the turn made, so it needs one decoder per turn. The agent encodes (not the TTS container,
which encodes per request, nor the relay Lambda, which stays free of native codecs and is billed per ms): it already
owns the turn's sample timeline, and libopus costs about 1-2 % of a core per real-time stream.

:class:`OpusStream` is libopus through PyAV at ``limits.SAMPLE_RATE`` mono, ``limits.OPUS_FRAME_SAMPLES`` per
packet (20 ms), application voip, ``limits.OPUS_BITRATE``. It satisfies
:class:`relay_core.packet_timeline.PacketEncoder`. Guarantees: a packet comes out as soon as its frame is
complete (no more input is waited for: libopus gives one packet per frame); samples short of a frame wait for the
next PCM; :meth:`OpusStream.flush` pads the last partial frame with silence and drains the encoder, so the
packets decode to at least ``pre_skip`` + every sample given.
"""

from __future__ import annotations

from fractions import Fraction

import av

from relay_core import limits
from relay_core.audio_piece import CODECS, Codec
from relay_core.errors import SessionStateError

OPUS_APPLICATION = "voip"
"""libopus tuned for speech."""


class OpusStream:
    """A turn's Opus encoder. Not thread-safe; one per turn; unusable after :meth:`flush`."""

    def __init__(self, *, bitrate: int = limits.OPUS_BITRATE) -> None:
        context = av.CodecContext.create("libopus", "w")
        assert isinstance(context, av.AudioCodecContext)
        context.sample_rate = limits.SAMPLE_RATE
        context.layout = "mono"
        context.format = "s16"
        context.bit_rate = bitrate
        context.time_base = Fraction(1, limits.SAMPLE_RATE)
        context.options = {
            "application": OPUS_APPLICATION,
            "frame_duration": str(1000 * limits.OPUS_FRAME_SAMPLES // limits.SAMPLE_RATE),
        }
        context.open()
        if context.frame_size != limits.OPUS_FRAME_SAMPLES:
            raise RuntimeError(
                f"libopus chose {context.frame_size}-sample frames, not {limits.OPUS_FRAME_SAMPLES}: check PyAV's "
                "libopus build"
            )
        self._context = context
        self._pending = b""
        self._pts = 0
        self._flushed = False

    @property
    def pre_skip(self) -> int:
        """Decoded samples before the first input sample (libopus's lookahead at 24 kHz, from the encoder)."""
        return int(self._context.initial_padding)

    @property
    def frame_samples(self) -> int:
        """Samples each packet decodes to."""
        return limits.OPUS_FRAME_SAMPLES

    def encode(self, pcm: bytes) -> list[bytes]:
        """Packets of every 20 ms frame completed by ``pcm`` (s16le, whole samples); the rest waits."""
        if self._flushed:
            raise SessionStateError("this Opus stream was flushed: a turn's stream ends once")
        CODECS[Codec.PCM_S16LE].samples_in(len(pcm))
        data = self._pending + pcm
        frame_bytes = limits.OPUS_FRAME_SAMPLES * limits.SAMPLE_WIDTH_BYTES
        whole = len(data) - len(data) % frame_bytes
        self._pending = data[whole:]
        packets: list[bytes] = []
        for at in range(0, whole, frame_bytes):
            packets.extend(self._encode_frame(data[at : at + frame_bytes]))
        return packets

    def flush(self) -> list[bytes]:
        """The last partial frame (padded with silence) and whatever the encoder still holds."""
        if self._flushed:
            return []
        packets: list[bytes] = []
        if self._pending:
            frame_bytes = limits.OPUS_FRAME_SAMPLES * limits.SAMPLE_WIDTH_BYTES
            packets.extend(self._encode_frame(self._pending.ljust(frame_bytes, b"\0")))
            self._pending = b""
        packets.extend(bytes(packet) for packet in self._context.encode(None))
        self._flushed = True
        return packets

    def _encode_frame(self, frame_pcm: bytes) -> list[bytes]:
        frame = av.AudioFrame(format="s16", layout="mono", samples=limits.OPUS_FRAME_SAMPLES)
        frame.planes[0].update(frame_pcm)
        frame.sample_rate = limits.SAMPLE_RATE
        frame.pts = self._pts
        self._pts += limits.OPUS_FRAME_SAMPLES
        return [bytes(packet) for packet in self._context.encode(frame)]


__all__ = ["OPUS_APPLICATION", "OpusStream"]
