"""Where the packets of one Opus stream land on the turn's PCM timeline (docs/client-protocol.md, "Opus").

A turn's Opus stream is one encoder's packets, each decoding to ``frame_samples`` samples. The decoded stream
starts with ``pre_skip`` samples of encoder lookahead that the listener never hears, and ends with padding past
the turn's last sample. The PCM timeline (what ``sample_offset``, ``total_samples``, word timings and barge-in's
``played_ms`` count) is the decoded stream with those dropped: packets ``[0, k)`` cover timeline samples
``[0, max(0, k * frame_samples - pre_skip))``, never more than the samples the encoder was given.

:class:`PacketTimeline` is the one place that arithmetic lives: the agent uses it to say how many samples each
chunk contributes (``samples``), the relay's framer to place the pieces it cuts, a client to check what it gets.
:class:`PacketEncoder` is what the agent's turn needs of an encoder (the codec itself lives outside the core).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from relay_core import limits
from relay_core.errors import AudioFormatError


class PacketEncoder(Protocol):
    """One turn's continuous packet encoder (24 kHz mono s16le in, whole packets out)."""

    @property
    def pre_skip(self) -> int:
        """Decoded samples before the first input sample (the encoder's lookahead)."""
        ...

    @property
    def frame_samples(self) -> int:
        """Samples each packet decodes to."""
        ...

    def encode(self, pcm: bytes) -> list[bytes]:
        """The packets of every frame completed by ``pcm`` (whole samples); a partial frame waits for more."""
        ...

    def flush(self) -> list[bytes]:
        """The rest: the last partial frame padded with silence, then what the encoder still holds."""
        ...


@dataclass
class PacketTimeline:
    """Places consecutive groups of a stream's packets on the PCM timeline. Not thread-safe; one per stream.

    Guarantees: the groups placed tile ``[0, samples)`` with no gap or overlap, and a group never reaches past
    the ``limit`` it is placed with (the samples the encoder had been given, or the turn's total)."""

    pre_skip: int = 0
    frame_samples: int = limits.OPUS_FRAME_SAMPLES
    packets: int = field(default=0, init=False)
    """Packets placed so far (the index of the next one)."""
    samples: int = field(default=0, init=False)
    """Timeline samples covered so far (the next group's start)."""

    def __post_init__(self) -> None:
        if self.pre_skip < 0 or self.frame_samples < 1:
            raise AudioFormatError(
                f"an Opus stream needs pre_skip >= 0 and frame_samples >= 1; got {self.pre_skip} and "
                f"{self.frame_samples}"
            )

    def place(self, n_packets: int, *, limit: int) -> tuple[int, int]:
        """``(start, samples)``: where the next ``n_packets`` packets' audio starts on the timeline and how many
        samples of it they contribute, at most up to ``limit``."""
        start = self.samples
        self.packets += n_packets
        end = max(start, min(max(0, self.packets * self.frame_samples - self.pre_skip), limit))
        self.samples = end
        return start, end - start


__all__ = ["PacketEncoder", "PacketTimeline"]
