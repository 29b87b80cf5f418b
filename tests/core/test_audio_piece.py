"""The audio piece and its codec table: PCM cuts on whole samples and joins back byte for byte on a contiguous
timeline; an Opus packet is never cut nor merged; a piece never holds a partial sample."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from relay_core import limits
from relay_core.audio_piece import CODECS, AudioPiece, Codec, join
from relay_core.errors import AudioFormatError, UncuttableAudioError

pcm_pieces = st.builds(
    AudioPiece.pcm,
    st.integers(min_value=0, max_value=4000).flatmap(lambda n: st.binary(min_size=2 * n, max_size=2 * n)),
    st.integers(min_value=0, max_value=10**9),
)


def test_the_table_names_every_codec_once_with_the_wire_name_and_the_timeline_rate() -> None:
    assert set(CODECS) == set(Codec)
    assert CODECS[Codec.PCM_S16LE].wire_name == limits.PCM_FORMAT == "pcm_s16le"
    assert CODECS[Codec.OPUS].wire_name == "opus"
    assert {spec.sample_rate for spec in CODECS.values()} == {limits.SAMPLE_RATE}
    assert CODECS[Codec.PCM_S16LE].cuttable and not CODECS[Codec.OPUS].cuttable


@given(piece=pcm_pieces, max_bytes=st.integers(min_value=2, max_value=9000), even=st.booleans())
def test_split_pcm_joins_back_byte_for_byte_on_a_contiguous_timeline(
    piece: AudioPiece, max_bytes: int, even: bool
) -> None:
    parts = piece.split(max_bytes, even=even)
    assert b"".join(p.data for p in parts) == piece.data
    assert parts[0].start_sample == piece.start_sample and parts[-1].end_sample == piece.end_sample
    assert all(a.end_sample == b.start_sample for a, b in pairwise(parts))
    assert all(len(p.data) <= max_bytes and len(p.data) == 2 * p.samples for p in parts)
    assert join(parts) == piece
    if len(parts) > 1:
        assert all(p.samples > 0 for p in parts)
        sizes = [p.samples for p in parts]
        if even:  # as few as fit, near-equal
            assert len(parts) == -(-piece.samples // (max_bytes // 2)) and max(sizes) - min(sizes) <= 1
        else:  # every piece full but the last
            assert all(size == max_bytes // 2 for size in sizes[:-1])


def test_split_pcm_cuts_on_whole_samples_under_an_odd_budget() -> None:
    piece = AudioPiece.pcm(bytes(range(10)), start_sample=7)
    assert [(p.data, p.start_sample, p.samples) for p in piece.split(5)] == [
        (bytes(range(4)), 7, 2),
        (bytes(range(4, 8)), 9, 2),
        (bytes(range(8, 10)), 11, 1),
    ]
    with pytest.raises(ValueError, match="at least one"):
        piece.split(1)


@given(size=st.integers(min_value=1, max_value=2000), budget=st.integers(min_value=1, max_value=4000))
def test_an_opus_packet_is_never_cut(size: int, budget: int) -> None:
    packet = AudioPiece(Codec.OPUS, b"\xfc" * size, start_sample=480, samples=480)
    if size <= budget:
        assert packet.split(budget) == [packet]
    else:
        with pytest.raises(UncuttableAudioError, match="cannot be cut"):
            packet.split(budget, even=True)


def test_opus_packets_are_not_joined_and_have_no_byte_arithmetic() -> None:
    first = AudioPiece(Codec.OPUS, b"\x01\x02\x03", 0, 480)
    second = AudioPiece(Codec.OPUS, b"\x04", 480, 960)
    assert join([first]) is first
    with pytest.raises(UncuttableAudioError):
        join([first, second])
    with pytest.raises(UncuttableAudioError, match="packet codec"):
        CODECS[Codec.OPUS].samples_in(3)
    assert isinstance(UncuttableAudioError("x"), AudioFormatError)


def test_a_piece_never_holds_a_partial_or_miscounted_sample() -> None:
    with pytest.raises(AudioFormatError, match="not whole 2-byte samples"):
        AudioPiece.pcm(b"\x01\x02\x03")
    with pytest.raises(AudioFormatError, match="hold 2 samples, not 3"):
        AudioPiece(Codec.PCM_S16LE, b"\x00" * 4, 0, 3)
    with pytest.raises(AudioFormatError, match="negative"):
        AudioPiece.pcm(b"", start_sample=-1)


def test_a_piece_knows_its_end_and_duration_and_can_be_moved() -> None:
    piece = AudioPiece.pcm(b"\x00\x00" * 12_000, start_sample=24_000)
    assert (piece.end_sample, piece.duration_s) == (36_000, 0.5)
    moved = piece.at(0)
    assert (moved.start_sample, moved.end_sample, moved.data) == (0, 12_000, piece.data)
    assert CODECS[Codec.PCM_S16LE].whole_bytes(7) == 6


def test_join_refuses_gaps_overlaps_mixed_codecs_and_nothing() -> None:
    a = AudioPiece.pcm(b"\x01\x00", 0)
    with pytest.raises(AudioFormatError, match="does not follow"):
        join([a, AudioPiece.pcm(b"\x02\x00", 2)])
    with pytest.raises(AudioFormatError, match="does not follow"):
        join([a, AudioPiece.pcm(b"\x02\x00", 0)])
    with pytest.raises(AudioFormatError, match="cannot join"):
        join([a, AudioPiece(Codec.OPUS, b"\x09", 1, 480)])
    with pytest.raises(AudioFormatError, match="at least one"):
        join([])
