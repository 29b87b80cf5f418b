"""mp3, opus (in Ogg), aac (in ADTS) and flac encoding through PyAV (FFmpeg's encoders), incrementally.

Its own module so that FFmpeg's libraries load only when a compressed format is first asked for
(:func:`kokoro_server.encoders.streaming_encoder` imports it then).
"""

from __future__ import annotations

import io

import av
import numpy as np

from relay_core.tts.http_events import AudioFormat


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
    AudioFormat.AAC: ("adts", "aac"),
}


class AvEncoder:
    """mp3, opus (Ogg), aac (ADTS) or flac through PyAV.

    Streaming (the default), the muxer writes into a non-seekable sink so that output leaves as it is made; a FLAC
    header then cannot state the length. ``whole=True`` muxes into memory that the muxer may seek, so the header
    is rewritten with the real length at :meth:`finish`, which returns the whole file (``encode`` returns nothing).
    ``bitrate_kbps`` sets a lossy codec's bitrate (None: FFmpeg's default)."""

    def __init__(
        self, fmt: AudioFormat, sample_rate: int, *, bitrate_kbps: int | None = None, whole: bool = False
    ) -> None:
        if fmt not in _AV_FORMATS:
            raise ValueError(f"PyAV encodes {', '.join(f.value for f in _AV_FORMATS)}, not {fmt.value}")
        container_format, codec = _AV_FORMATS[fmt]
        self.sample_rate = sample_rate
        self._sink = _Sink()
        self._whole: io.BytesIO | None = io.BytesIO() if whole else None
        target = self._whole if self._whole is not None else self._sink
        self._container = av.open(target, mode="w", format=container_format)
        stream = self._container.add_stream(codec, rate=sample_rate)
        if not isinstance(stream, av.audio.stream.AudioStream):  # pragma: no cover - an audio codec gives one
            raise TypeError(f"PyAV made a {type(stream).__name__} for audio codec {codec}")
        stream.layout = "mono"
        if bitrate_kbps is not None:
            stream.bit_rate = bitrate_kbps * 1000
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
        if self._whole is not None:
            return self._whole.getvalue()
        return self._sink.take()
