"""Audio encoders for HTTP answers: PCM in, bytes of the requested format out, incrementally.

Every encoder takes s16le mono PCM segment by segment and returns the bytes it can emit so far, so a streamed
answer carries audio as each segment is produced. WAV streams with 0xFFFFFFFF sizes (the length is unknown);
:func:`encode_whole` writes exact sizes. mp3, opus (in Ogg) and flac go through PyAV (FFmpeg's encoders).
The encoders are not thread-safe; one request uses one encoder, sequentially.
"""

from __future__ import annotations

from typing import Protocol

import av
import numpy as np

from relay_core import limits
from relay_core.audio import wav_bytes, wav_header
from relay_core.http_events import AudioFormat


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


class _Sink:
    """A write-only file for PyAV's muxer: collects what it writes until taken."""

    def __init__(self) -> None:
        self._chunks: list[bytes] = []

    def write(self, data: bytes) -> int:
        self._chunks.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        out = b"".join(self._chunks)
        self._chunks.clear()
        return out


_AV_FORMATS = {
    AudioFormat.MP3: ("mp3", "libmp3lame"),
    AudioFormat.OPUS: ("ogg", "libopus"),
    AudioFormat.FLAC: ("flac", "flac"),
}


class AvEncoder:
    """mp3, opus (Ogg) or flac through PyAV, muxed into a non-seekable sink so that output streams."""

    def __init__(self, fmt: AudioFormat, sample_rate: int) -> None:
        if fmt not in _AV_FORMATS:
            raise ValueError(f"PyAV encodes {', '.join(f.value for f in _AV_FORMATS)}, not {fmt.value}")
        container_format, codec = _AV_FORMATS[fmt]
        self.sample_rate = sample_rate
        self._sink = _Sink()
        self._container = av.open(self._sink, mode="w", format=container_format)
        stream = self._container.add_stream(codec, rate=sample_rate)
        if not isinstance(stream, av.audio.stream.AudioStream):  # pragma: no cover - an audio codec gives one
            raise TypeError(f"PyAV made a {type(stream).__name__} for audio codec {codec}")
        stream.layout = "mono"
        self._stream = stream
        self._pts = 0
        self._closed = False

    def begin(self) -> bytes:
        return b""

    def encode(self, pcm: bytes) -> bytes:
        samples = np.frombuffer(pcm, dtype="<i2")
        if samples.size:
            frame = av.AudioFrame.from_ndarray(samples.reshape(1, -1), format="s16", layout="mono")
            frame.sample_rate = self.sample_rate
            frame.pts = self._pts
            self._pts += samples.size
            for packet in self._stream.encode(frame):
                self._container.mux(packet)
        return self._sink.take()

    def finish(self) -> bytes:
        if not self._closed:
            self._closed = True
            for packet in self._stream.encode(None):
                self._container.mux(packet)
            self._container.close()
        return self._sink.take()


def streaming_encoder(fmt: AudioFormat, *, sample_rate: int = limits.SAMPLE_RATE) -> AudioEncoder:
    """The incremental encoder for ``fmt``."""
    if fmt is AudioFormat.PCM:
        return PcmEncoder()
    if fmt is AudioFormat.WAV:
        return StreamingWavEncoder(sample_rate)
    return AvEncoder(fmt, sample_rate)


def encode_whole(fmt: AudioFormat, pcm: bytes, *, sample_rate: int = limits.SAMPLE_RATE) -> bytes:
    """All of ``pcm`` as one file of ``fmt`` (WAV with exact sizes)."""
    if fmt is AudioFormat.WAV:
        return wav_bytes(pcm, sample_rate=sample_rate)
    encoder = streaming_encoder(fmt, sample_rate=sample_rate)
    return encoder.begin() + encoder.encode(pcm) + encoder.finish()


def is_cheap(fmt: AudioFormat) -> bool:
    """True for formats whose encoding is a copy (safe on the event loop); others run on a thread."""
    return fmt in (AudioFormat.PCM, AudioFormat.WAV)
