"""Audio as a typed piece on a sample timeline, and the table of codecs that says how a piece may be cut.

Every part of the relay moves audio in pieces: the TTS session's binary frames, the agent's ``audio_chunk``
events, the relay's client messages. An :class:`AudioPiece` is one such piece: its :class:`Codec`, its bytes,
where its first sample sits on the stream's timeline (``start_sample``) and how many samples it holds. The
timeline is always counted in samples of the stream's sample rate, whatever the codec, so that offsets and word
timings mean the same thing for PCM and for Opus.

What may be done to a piece is decided by its codec's :class:`CodecSpec` in :data:`CODECS`, never by byte
arithmetic at the call site:

* PCM s16le may be cut on any whole sample (2 bytes) and pieces that follow each other join back into one;
* an Opus packet is never cut: a piece of a packet codec is whole packets (one, or an ``audio_chunk``'s, whose
  sample count the chunk carries) and is never cut or joined; a piece too large for a budget raises
  :class:`~relay_core.errors.UncuttableAudioError` (the framer groups an Opus chunk's packets itself, keeping each
  packet whole: :mod:`relay_core.client.framing`).

A client chooses what it receives with :class:`AudioChoice` (``"pcm"``, the default, or ``"opus"``: the
``audio`` field of ``sendMessage`` and of the agent payload); the agent encodes the turn's speech as one Opus
stream (raw packets of ``limits.OPUS_FRAME_SAMPLES``) when asked, and the relay moves whole packets.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from itertools import pairwise
from types import MappingProxyType
from typing import Final

from relay_core import limits
from relay_core.errors import AudioFormatError, InvalidFieldError, UncuttableAudioError


class Codec(StrEnum):
    """How a piece's bytes encode its samples; the value is the codec's name on every wire (``format``)."""

    PCM_S16LE = limits.PCM_FORMAT
    OPUS = limits.OPUS_FORMAT


AUDIO_CHOICE_FIELD: Final = "audio"
"""The field of ``sendMessage`` and of the agent payload that names the :class:`AudioChoice`."""


class AudioChoice(StrEnum):
    """What a client asks to receive (``audio``): ``pcm`` (s16le, the default, works everywhere) or ``opus``
    (raw Opus packets, 24 kHz mono, ``limits.OPUS_FRAME_SAMPLES`` per packet)."""

    PCM = "pcm"
    OPUS = "opus"

    @property
    def codec(self) -> Codec:
        """The codec the turn's audio travels in."""
        return Codec.PCM_S16LE if self is AudioChoice.PCM else Codec.OPUS


def parse_audio_choice(obj: Mapping[str, object]) -> AudioChoice:
    """The ``audio`` field of a request (absent or null: ``pcm``). Raises ``InvalidFieldError`` naming the
    allowed values for anything else."""
    value = obj.get(AUDIO_CHOICE_FIELD)
    if value is None:
        return AudioChoice.PCM
    if isinstance(value, str) and value in AudioChoice.__members__.values():
        return AudioChoice(value)
    allowed = " or ".join(repr(choice.value) for choice in AudioChoice)
    shown = repr(value)[:40] if isinstance(value, str) else f"a {type(value).__name__}"
    raise InvalidFieldError(f"'{AUDIO_CHOICE_FIELD}' must be {allowed} (default 'pcm'); got {shown}")


@dataclass(frozen=True, slots=True)
class CodecSpec:
    """What the relay needs to know about a codec to move its pieces.

    ``sample_bytes`` is the size of one sample (all channels) for a codec whose bytes are a whole number of
    samples and that may be cut on any of them; ``None`` for a packet codec, whose pieces are never cut and whose
    sample count is told by whoever made the packet."""

    codec: Codec
    sample_rate: int
    channels: int
    sample_bytes: int | None

    @property
    def wire_name(self) -> str:
        """The codec's name on the wire (``audio_stream_start``'s ``format``)."""
        return self.codec.value

    @property
    def cuttable(self) -> bool:
        """Whether a piece may be cut (on whole samples) and pieces joined; False: one packet, one piece."""
        return self.sample_bytes is not None

    def samples_in(self, n_bytes: int) -> int:
        """Samples in ``n_bytes`` of a cuttable codec; raises ``AudioFormatError`` for a partial sample and
        ``UncuttableAudioError`` for a packet codec (whose bytes do not say how many samples they hold)."""
        width = self.cut_unit_bytes()
        count, partial = divmod(n_bytes, width)
        if partial or n_bytes < 0:
            raise AudioFormatError(
                f"{n_bytes} bytes of {self.wire_name} are not whole {width}-byte samples: keep audio on sample "
                "boundaries (a transport that cuts anywhere must hold the partial sample back)"
            )
        return count

    def whole_bytes(self, n_bytes: int) -> int:
        """The most bytes of ``n_bytes`` that are whole samples (what may be passed on while the rest waits)."""
        return n_bytes - n_bytes % self.cut_unit_bytes()

    def cut_unit_bytes(self) -> int:
        """Bytes of the smallest unit a piece may be cut on (one sample); raises ``UncuttableAudioError`` for a
        packet codec."""
        if self.sample_bytes is None:
            raise UncuttableAudioError(
                f"{self.wire_name} is a packet codec: its bytes cannot be counted or cut in samples; give each "
                "packet's sample count and keep the packet whole"
            )
        return self.sample_bytes


CODECS: Final = MappingProxyType(
    {
        Codec.PCM_S16LE: CodecSpec(
            Codec.PCM_S16LE, limits.SAMPLE_RATE, limits.CHANNELS, limits.SAMPLE_WIDTH_BYTES * limits.CHANNELS
        ),
        Codec.OPUS: CodecSpec(Codec.OPUS, limits.SAMPLE_RATE, limits.CHANNELS, None),
    }
)
"""Every codec the relay knows, by :class:`Codec`. Timelines count samples at ``sample_rate`` (24 kHz mono)."""


@dataclass(frozen=True, slots=True)
class AudioPiece:
    """``samples`` samples of audio in ``codec``, the first at ``start_sample`` on its stream's timeline.

    Guarantees: ``start_sample`` and ``samples`` are not negative, and for a cuttable codec ``data`` is exactly
    ``samples`` whole samples (checked when the piece is made, so a piece never holds half a sample)."""

    codec: Codec
    data: bytes
    start_sample: int
    samples: int

    def __post_init__(self) -> None:
        if self.start_sample < 0 or self.samples < 0:
            raise AudioFormatError(
                f"an audio piece starts at sample {self.start_sample} and holds {self.samples}: neither may be negative"
            )
        spec = CODECS[self.codec]
        if spec.cuttable and spec.samples_in(len(self.data)) != self.samples:
            raise AudioFormatError(
                f"{len(self.data)} bytes of {spec.wire_name} hold {spec.samples_in(len(self.data))} samples, "
                f"not {self.samples}"
            )

    @classmethod
    def pcm(cls, data: bytes, start_sample: int = 0) -> AudioPiece:
        """s16le PCM starting at ``start_sample``; its sample count comes from its length. Raises
        ``AudioFormatError`` when ``data`` is not whole samples."""
        data = bytes(data)
        return cls(Codec.PCM_S16LE, data, start_sample, CODECS[Codec.PCM_S16LE].samples_in(len(data)))

    @property
    def spec(self) -> CodecSpec:
        """The codec's entry in :data:`CODECS`."""
        return CODECS[self.codec]

    @property
    def end_sample(self) -> int:
        """The sample just after this piece: where the next piece of the stream starts."""
        return self.start_sample + self.samples

    @property
    def duration_s(self) -> float:
        """Seconds of audio in this piece."""
        return self.samples / self.spec.sample_rate

    def at(self, start_sample: int) -> AudioPiece:
        """The same audio placed at ``start_sample`` (e.g. moved from a request's timeline onto a turn's)."""
        return AudioPiece(self.codec, self.data, start_sample, self.samples)

    def split(self, max_bytes: int, *, even: bool = False) -> list[AudioPiece]:
        """This piece as consecutive pieces of at most ``max_bytes`` each that :func:`join` back into it.

        A piece within the budget comes back alone (an empty one too). Otherwise a cuttable codec is cut on whole
        samples: greedily (every piece full but the last) or, with ``even``, into as few pieces of near-equal size
        as the budget allows (the first ones one sample longer; no tiny tail). Raises ``UncuttableAudioError``
        for a packet codec's piece over the budget and ``ValueError`` for a budget below one sample."""
        if len(self.data) <= max_bytes:
            return [self]
        spec = self.spec
        if not spec.cuttable:
            raise UncuttableAudioError(
                f"a {spec.wire_name} packet of {len(self.data)} bytes does not fit {max_bytes} bytes and cannot be "
                "cut: raise the budget or make smaller packets"
            )
        width = spec.cut_unit_bytes()
        max_samples = max_bytes // width
        if max_samples < 1:
            raise ValueError(f"max_bytes must hold at least one {width}-byte sample; got {max_bytes}")
        return list(self._cut(self._sizes(max_samples, even=even)))

    def _sizes(self, max_samples: int, *, even: bool) -> Iterator[int]:
        if not even:
            full, rest = divmod(self.samples, max_samples)
            yield from [max_samples] * full + ([rest] if rest else [])
            return
        count = -(-self.samples // max_samples)
        base, extra = divmod(self.samples, count)
        for index in range(count):
            yield base + (index < extra)

    def _cut(self, sizes: Iterable[int]) -> Iterator[AudioPiece]:
        width = self.spec.cut_unit_bytes()
        start = self.start_sample
        at = 0
        for size in sizes:
            yield AudioPiece(self.codec, self.data[at : at + size * width], start, size)
            at += size * width
            start += size


def join(pieces: Iterable[AudioPiece]) -> AudioPiece:
    """Consecutive pieces of one cuttable codec as one piece (what :meth:`AudioPiece.split` undoes).

    Raises ``AudioFormatError`` for no pieces, mixed codecs or a gap or overlap on the timeline, and
    ``UncuttableAudioError`` for two or more packets of a packet codec (their boundaries would be lost)."""
    items = list(pieces)
    if not items:
        raise AudioFormatError("join needs at least one audio piece")
    first = items[0]
    if len(items) == 1:
        return first
    if not first.spec.cuttable:
        raise UncuttableAudioError(
            f"{first.spec.wire_name} packets cannot be joined into one piece: keep them as a list of packets"
        )
    for before, after in pairwise(items):
        if after.codec is not before.codec:
            raise AudioFormatError(f"cannot join {before.codec.value} and {after.codec.value} audio")
        if after.start_sample != before.end_sample:
            raise AudioFormatError(
                f"audio piece at sample {after.start_sample} does not follow the one ending at sample "
                f"{before.end_sample}: join only consecutive pieces"
            )
    data = b"".join(piece.data for piece in items)
    return AudioPiece(first.codec, data, first.start_sample, items[-1].end_sample - first.start_sample)


__all__ = [
    "AUDIO_CHOICE_FIELD",
    "CODECS",
    "AudioChoice",
    "AudioPiece",
    "Codec",
    "CodecSpec",
    "join",
    "parse_audio_choice",
]
