"""ClientSession with an Opus turn: whole packets out as OpusReceived, placed on the PCM timeline, kept in order."""

from __future__ import annotations

import json

import pytest

from relay_core.agent.events import AgentEnd, AgentStart, AudioChunk, AudioStreamEnd, AudioStreamStart
from relay_core.audio_piece import AudioChoice, Codec
from relay_core.client.framing import TurnFramer
from relay_core.client.session import AudioStarted, ClientSession, OpusReceived
from relay_core.errors import ProtocolError
from relay_core.packet_timeline import PacketTimeline

TID = "t-opus"
PRE_SKIP = 156


def opus_messages(n_chunks: int = 3, packets_per_chunk: int = 40, short: int = 100) -> list[str]:
    framer = TurnFramer(TID, budget_bytes=1024)
    total = n_chunks * packets_per_chunk * 480 - PRE_SKIP - short
    timeline = PacketTimeline(PRE_SKIP)
    out = framer.frame(AgentStart(TID))
    out += framer.frame(AudioStreamStart(TID, "af_heart", format="opus", frame_samples=480, pre_skip=PRE_SKIP))
    for seq in range(n_chunks):
        packets = [bytes([seq, i]) * 30 for i in range(packets_per_chunk)]
        _start, samples = timeline.place(len(packets), limit=total if seq == n_chunks - 1 else 10**9)
        out += framer.frame(AudioChunk.of_packets(TID, seq, packets, samples))
    out += framer.frame(AudioStreamEnd(TID, total_chunks=n_chunks, duration_s=0.0))
    return out + framer.frame(AgentEnd(TID))


def test_an_opus_turn_gives_its_packets_in_order_on_the_pcm_timeline() -> None:
    session = ClientSession(collect_audio=True)
    sent = json.loads(session.send_message("hi", turn_id=TID, audio=AudioChoice.OPUS))
    assert sent["audio"] == "opus"
    events = [e for m in opus_messages() for e in session.receive(m)]
    (started,) = [e for e in events if isinstance(e, AudioStarted)]
    assert (started.format, started.frame_samples, started.pre_skip) == ("opus", 480, PRE_SKIP)
    received = [e for e in events if isinstance(e, OpusReceived)]
    assert len(received) > 3  # cut between packets by the small frame
    end = 0
    for event in received:
        assert event.sample_offset == end and event.piece.codec is Codec.OPUS
        end += event.samples
    turn = session.turn(TID)
    assert turn.codec is Codec.OPUS and turn.samples == end == 3 * 40 * 480 - PRE_SKIP - 100
    assert turn.packets == [bytes([seq, i]) * 30 for seq in range(3) for i in range(40)] and turn.pcm == b""


def test_a_pcm_chunk_in_an_opus_stream_is_a_protocol_error() -> None:
    session = ClientSession()
    session.send_message("hi", turn_id=TID, audio=AudioChoice.OPUS)
    messages = opus_messages()
    session.receive(messages[0])
    session.receive(messages[1])
    bad = json.loads(messages[2])
    del bad["packet_bytes"], bad["samples"]
    with pytest.raises(ProtocolError, match="packet_bytes"):
        session.receive(json.dumps(bad))
