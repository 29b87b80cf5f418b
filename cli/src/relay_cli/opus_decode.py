"""Decoding one turn's Opus stream back to the turn's PCM (what ``relay chat --audio opus`` writes as WAV).

A turn's Opus packets form one stream: one decoder per turn, packets decoded in order, the stream's first
``pre_skip`` samples dropped and everything past ``total_samples`` cut (docs/client-protocol.md, "Opus").
libopus (through PyAV) decodes at 48 kHz; :class:`OpusTurnDecoder` resamples to the turn's 24 kHz (the
resampler keeps the timeline aligned: sample 2n at 48 kHz is sample n at 24 kHz).
"""

from __future__ import annotations

import av

from relay_core import limits
from relay_core.errors import AudioFormatError


class OpusTurnDecoder:
    """One turn's decoder: feed packets in order, then :meth:`finish` for the turn's s16le PCM."""

    def __init__(self, *, pre_skip: int, sample_rate: int = limits.SAMPLE_RATE) -> None:
        self._decoder = av.CodecContext.create("libopus", "r")
        self._resampler = av.AudioResampler(format="s16", layout="mono", rate=sample_rate)
        self._pre_skip = pre_skip
        self._pcm = bytearray()

    def decode(self, packets: list[bytes] | tuple[bytes, ...]) -> None:
        """Decode the next packets of the stream, in order."""
        for packet in packets:
            try:
                frames = self._decoder.decode(av.Packet(packet))
            except av.FFmpegError as exc:
                raise AudioFormatError(f"an Opus packet of {len(packet)} bytes did not decode: {exc}") from exc
            for frame in frames:
                assert isinstance(frame, av.AudioFrame)
                self._keep(self._resampler.resample(frame))

    def finish(self, total_samples: int) -> bytes:
        """The turn's PCM: the decoded stream without its first ``pre_skip`` samples, cut at ``total_samples``.
        Raises ``AudioFormatError`` when the packets decoded to fewer samples than that."""
        self._keep(self._resampler.resample(None))
        width = limits.SAMPLE_WIDTH_BYTES
        start, end = self._pre_skip * width, (self._pre_skip + total_samples) * width
        if len(self._pcm) < end:
            raise AudioFormatError(
                f"the Opus stream decoded to {len(self._pcm) // width - self._pre_skip} samples after pre_skip, "
                f"fewer than the turn's {total_samples}: packets are missing"
            )
        return bytes(self._pcm[start:end])

    def _keep(self, frames: list[av.AudioFrame]) -> None:
        for frame in frames:
            self._pcm += bytes(frame.planes[0])[: frame.samples * limits.SAMPLE_WIDTH_BYTES]


def decode_opus_turn(packets: list[bytes], *, pre_skip: int, total_samples: int) -> bytes:
    """A whole turn's packets as its s16le 24 kHz PCM (``total_samples`` samples)."""
    decoder = OpusTurnDecoder(pre_skip=pre_skip)
    decoder.decode(packets)
    return decoder.finish(total_samples)


__all__ = ["OpusTurnDecoder", "decode_opus_turn"]
