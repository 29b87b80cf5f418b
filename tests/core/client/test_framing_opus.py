"""The framer with an Opus turn: whole packets per message, never cut, placed to tile [0, total_samples)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relay_core import limits
from relay_core.agent.events import AgentEnd, AudioChunk, AudioStreamEnd, AudioStreamStart
from relay_core.audio import b64decode
from relay_core.client.framing import TurnFramer, utf8_size
from relay_core.client.turn_messages import TurnMessage, parse_server_message
from relay_core.errors import AudioFormatError
from relay_core.packet_timeline import PacketTimeline

RID = "req-1"
PRE_SKIP = 156


def opus_start() -> AudioStreamStart:
    return AudioStreamStart(
        RID, voice="af_heart", format="opus", frame_samples=limits.OPUS_FRAME_SAMPLES, pre_skip=PRE_SKIP
    )


def agent_chunks(sizes_per_chunk: list[list[int]], total: int) -> list[AudioChunk]:
    """Agent chunks of packets of the given sizes, placed as the agent places them (the last reaching ``total``)."""
    timeline = PacketTimeline(PRE_SKIP)
    chunks = []
    for seq, sizes in enumerate(sizes_per_chunk):
        packets = [bytes([seq % 256, i % 256]) * (size // 2) + b"\x01" * (size % 2) for i, size in enumerate(sizes)]
        last = seq == len(sizes_per_chunk) - 1
        _start, samples = timeline.place(len(packets), limit=total if last else 10**9)
        chunks.append(AudioChunk.of_packets(RID, seq, packets, samples))
    return chunks


def framed_messages(framer: TurnFramer, chunks: list[AudioChunk]) -> list[TurnMessage]:
    texts = [*framer.frame(opus_start())]
    for chunk in chunks:
        texts += framer.frame(chunk)
    texts += framer.frame(AudioStreamEnd(RID, total_chunks=len(chunks), duration_s=0.0))
    texts += framer.frame(AgentEnd(RID))
    assert all(utf8_size(text) <= framer.budget_bytes for text in texts)
    out = [parse_server_message(text) for text in texts]
    assert all(isinstance(message, TurnMessage) for message in out)
    return out  # type: ignore[return-value]


def test_an_opus_chunk_is_cut_between_whole_packets_and_tiles_the_timeline() -> None:
    sizes = [[60] * 30, [61, 1, 59] * 10, [90] * 5]
    total = 65 * 480 - PRE_SKIP - 200
    chunks = agent_chunks(sizes, total)
    framer = TurnFramer("t-1", budget_bytes=1024)
    messages = framed_messages(framer, chunks)
    audio = [m.event for m in messages if isinstance(m.event, AudioChunk)]
    assert len(audio) > len(chunks)  # the small budget made it cut
    packets = [p for chunk in audio for p in chunk.packets()]
    assert packets == [p for chunk in chunks for p in chunk.packets()]  # same packets, none cut, in order
    end = 0
    for chunk in audio:
        assert chunk.sample_offset == end and chunk.samples is not None
        end += chunk.samples
    stream_end = next(m.event for m in messages if isinstance(m.event, AudioStreamEnd))
    assert end == total == stream_end.total_samples == framer.samples


def test_a_pcm_turn_carries_none_of_the_opus_fields() -> None:
    framer = TurnFramer("t-1")
    texts = framer.frame(AudioStreamStart(RID, voice="v")) + framer.frame(AudioChunk(RID, 0, "AAAAAA=="))
    for text in texts:
        assert not {"frame_samples", "pre_skip", "samples", "packet_bytes"} & json.loads(text).keys()


def test_the_opus_start_carries_frame_samples_and_pre_skip() -> None:
    obj: dict[str, Any] = json.loads(TurnFramer("t-1").frame(opus_start())[0])
    assert (obj["format"], obj["frame_samples"], obj["pre_skip"]) == ("opus", 480, PRE_SKIP)


def test_a_chunk_whose_samples_disagree_with_its_packets_is_refused_and_nothing_counts() -> None:
    framer = TurnFramer("t-1")
    framer.frame(opus_start())
    with pytest.raises(AudioFormatError, match="packets end at sample"):
        framer.frame(AudioChunk.of_packets(RID, 0, [b"\x01" * 40], 480))  # one packet covers 324, not 480
    assert (framer.next_seq, framer.samples) == (1, 0)
    framer.frame(AudioChunk.of_packets(RID, 0, [b"\x01" * 40], 324))
    assert framer.samples == 324


def test_an_opus_chunk_without_packet_bytes_is_refused() -> None:
    framer = TurnFramer("t-1")
    framer.frame(opus_start())
    with pytest.raises(AudioFormatError, match="packet_bytes"):
        framer.frame(AudioChunk(RID, 0, "AAAA"))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.lists(st.integers(min_value=1, max_value=400), min_size=1, max_size=40), min_size=1, max_size=6),
    st.integers(min_value=0, max_value=479),
)
def test_framing_never_cuts_a_packet_and_always_tiles(sizes: list[list[int]], short: int) -> None:
    n_packets = sum(len(s) for s in sizes)
    total = max(0, n_packets * 480 - PRE_SKIP - short)
    chunks = agent_chunks(sizes, total)
    framer = TurnFramer("t-" + "x" * 60, budget_bytes=1024)
    messages = framed_messages(framer, chunks)
    audio = [m.event for m in messages if isinstance(m.event, AudioChunk)]
    assert [p for c in audio for p in c.packets()] == [p for c in chunks for p in c.packets()]
    for chunk in audio:
        assert chunk.packet_bytes is not None and sum(chunk.packet_bytes) == len(b64decode(chunk.data))
    assert sum(c.samples or 0 for c in audio) == total == framer.samples
