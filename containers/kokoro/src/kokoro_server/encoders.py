"""Audio encoders for HTTP answers: PCM in, bytes of the requested format out, incrementally.

Every encoder takes s16le mono PCM segment by segment and returns the bytes it can emit so far, so a streamed
answer carries audio as each segment is produced. WAV streams with 0xFFFFFFFF sizes (the length is unknown);
:func:`encode_whole` writes the real length into WAV and FLAC headers. mp3, opus (in Ogg), aac (ADTS) and flac go
through PyAV (FFmpeg's encoders, :mod:`kokoro_server.codec_encoder`).
The encoders are not thread-safe; one request uses one encoder, sequentially.
"""

from __future__ import annotations

from typing import Protocol

from relay_core import limits
from relay_core.audio import wav_bytes, wav_header
from relay_core.tts.http_events import AudioFormat


class AudioEncoder(Protocol):
    """Incremental encoder of one stream."""

    def begin(self) -> bytes:
        """Bytes before any audio (a header), possibly empty."""
        ...

    def encode(self, pcm: bytes) -> bytes:
        """Encode one piece of PCM; returns what is ready to send (possibly empty)."""
        ...

    def finish(self) -> bytes:
        """Flush: the remaining bytes of the stream."""
        ...


class PcmEncoder:
    """Raw s16le: the PCM itself."""

    def begin(self) -> bytes:
        return b""

    def encode(self, pcm: bytes) -> bytes:
        return pcm

    def finish(self) -> bytes:
        return b""


class StreamingWavEncoder(PcmEncoder):
    """A WAV header with 0xFFFFFFFF sizes, then the PCM as it comes."""

    def __init__(self, sample_rate: int) -> None:
        self.sample_rate = sample_rate

    def begin(self) -> bytes:
        return wav_header(None, sample_rate=self.sample_rate)


def _av_encoder(fmt: AudioFormat, sample_rate: int, bitrate_kbps: int | None, *, whole: bool) -> AudioEncoder:
    # PyAV (FFmpeg's libraries, ~15 MB of RSS) is loaded on the first compressed request, not at start-up:
    # the WebSocket session and PCM/WAV answers never need it.
    from kokoro_server.codec_encoder import AvEncoder  # noqa: PLC0415

    return AvEncoder(fmt, sample_rate, bitrate_kbps=bitrate_kbps, whole=whole)


def streaming_encoder(
    fmt: AudioFormat, *, sample_rate: int = limits.SAMPLE_RATE, bitrate_kbps: int | None = None
) -> AudioEncoder:
    """The incremental encoder for ``fmt`` (``bitrate_kbps`` for mp3, opus, aac)."""
    if fmt is AudioFormat.PCM:
        return PcmEncoder()
    if fmt is AudioFormat.WAV:
        return StreamingWavEncoder(sample_rate)
    return _av_encoder(fmt, sample_rate, bitrate_kbps, whole=False)


def encode_whole(
    fmt: AudioFormat, pcm: bytes, *, sample_rate: int = limits.SAMPLE_RATE, bitrate_kbps: int | None = None
) -> bytes:
    """All of ``pcm`` as one file of ``fmt``; WAV and FLAC headers carry the real length."""
    if fmt is AudioFormat.WAV:
        return wav_bytes(pcm, sample_rate=sample_rate)
    if fmt is AudioFormat.PCM:
        return pcm
    encoder = _av_encoder(fmt, sample_rate, bitrate_kbps, whole=True)
    return encoder.begin() + encoder.encode(pcm) + encoder.finish()


def is_cheap(fmt: AudioFormat) -> bool:
    """True for formats whose encoding is a copy (safe on the event loop); others run on a thread."""
    return fmt in (AudioFormat.PCM, AudioFormat.WAV)
