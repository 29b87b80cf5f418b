"""relay_core.client.framing: agent events re-framed into numbered messages under the frame quota."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relay_core import limits
from relay_core.agent.defaults import AUDIO_CHUNK_BYTES
from relay_core.agent.events import (
    AgentEnd,
    AgentEvent,
    AgentFailed,
    AgentStart,
    AudioChunk,
    AudioStreamEnd,
    AudioStreamStart,
    TextDelta,
)
from relay_core.audio import b64decode, b64encode
from relay_core.client.framing import TurnFramer, max_audio_pcm_bytes, split_pcm_evenly, split_text_to_fit, utf8_size
from relay_core.client.turn_messages import TurnMessage, parse_server_message
from relay_core.errors import AudioFormatError, SessionStateError, UncuttableAudioError

RID = "req-1"


def decoded(messages: list[str]) -> list[dict[str, Any]]:
    return [json.loads(m) for m in messages]


def test_a_small_turn_keeps_one_message_per_event_numbered_from_zero() -> None:
    framer = TurnFramer("t-1")
    pcm = bytes(range(256)) * 4
    out: list[str] = []
    events: list[AgentEvent] = [
        AgentStart(RID, session_id="s" * 40, mode="bidi", model="speak"),
        TextDelta(RID, 0, "Hello. "),
        AudioStreamStart(RID, voice="jf_alpha"),
        AudioChunk(RID, 0, b64encode(pcm)),
        TextDelta(RID, 1, "Bye."),
        AudioStreamEnd(RID, total_chunks=1, duration_s=0.02),
        AgentEnd(RID, text_chars=11, sentences=2, first_audio_s=0.1, elapsed_s=0.5),
    ]
    for event in events:
        out += framer.frame(event)
    objs = decoded(out)
    assert [o["seq"] for o in objs] == list(range(7))
    assert {o["turn_id"] for o in objs} == {"t-1"}
    assert all("request_id" not in o and "session_id" not in o for o in objs)
    assert [o["type"] for o in objs] == [
        "agent_start",
        "text_delta",
        "audio_stream_start",
        "audio_chunk",
        "text_delta",
        "audio_stream_end",
        "agent_end",
    ]
    assert objs[1]["text"] == "Hello. "
    assert objs[2] == {
        "turn_id": "t-1",
        "seq": 2,
        "voice": "jf_alpha",
        "format": "pcm_s16le",
        "sample_rate": 24000,
        "channels": 1,
        "type": "audio_stream_start",
    }
    assert (objs[3]["chunk"], objs[3]["sample_offset"], b64decode(objs[3]["data"])) == (0, 0, pcm)
    assert objs[5]["total_samples"] == len(pcm) // 2
    assert objs[6]["status"] == "completed" and objs[6]["first_audio_s"] == 0.1
    assert framer.finished and framer.last_seq == 6


def test_a_large_audio_chunk_is_cut_on_samples_into_messages_under_the_budget() -> None:
    framer = TurnFramer("t-1")
    framer.frame(AudioStreamStart(RID, voice="jf_alpha"))
    pcm = bytes((i * 7) % 256 for i in range(limits.SAMPLE_RATE * 2 * 3))  # three seconds
    out = framer.frame(AudioChunk(RID, 4, b64encode(pcm)))
    assert len(out) > 3
    assert all(utf8_size(m) <= limits.CLIENT_FRAME_BUDGET_BYTES for m in out)
    pieces = [parse_server_message(m) for m in out]
    audio = [p.event for p in pieces if isinstance(p, TurnMessage) and isinstance(p.event, AudioChunk)]
    assert len(audio) == len(pieces) and all(a.seq == 4 for a in audio), "each piece names the agent chunk"
    assert [p.seq for p in pieces if isinstance(p, TurnMessage)] == list(range(1, 1 + len(out)))
    joined = b"".join(b64decode(p.data) for p in audio)
    assert joined == pcm
    offsets = [p.sample_offset for p in audio]
    assert offsets == [sum(len(b64decode(q.data)) // 2 for q in audio[:i]) for i in range(len(audio))]
    # as few messages as the budget allows, of near-equal size (no tiny tail)
    room = limits.CLIENT_FRAME_BUDGET_BYTES - (utf8_size(out[0]) - len(json.loads(out[0])["data"]))
    assert len(out) == -(-len(pcm) // (room * 3 // 4))
    sizes = [len(b64decode(p.data)) for p in audio]
    assert max(sizes) - min(sizes) <= 2
    assert framer.samples == len(pcm) // 2


def test_a_long_text_delta_is_cut_on_code_points_under_the_budget() -> None:
    text = ('日本語のテキスト😀"\\\n\x01' * 3000)[: limits.MAX_PROMPT_CHARS]
    framer = TurnFramer("t-1")
    out = framer.frame(TextDelta(RID, 0, text))
    assert len(out) > 1
    assert all(utf8_size(m) <= limits.CLIENT_FRAME_BUDGET_BYTES for m in out)
    assert "".join(o["text"] for o in decoded(out)) == text


def test_a_lone_surrogate_becomes_a_replacement_character() -> None:
    framer = TurnFramer("t-1")
    (message,) = framer.frame(TextDelta(RID, 0, "a\ud800b"))
    message.encode("utf-8")
    assert json.loads(message)["text"] == "a\ufffdb"


def test_empty_text_and_audio_still_take_one_message() -> None:
    framer = TurnFramer("t-1")
    assert len(framer.frame(TextDelta(RID, 0, ""))) == 1
    (audio,) = framer.frame(AudioChunk(RID, 0, ""))
    assert json.loads(audio)["data"] == ""


def test_a_custom_budget_is_honoured() -> None:
    framer = TurnFramer("t-1", budget_bytes=2048)
    out = framer.frame(AudioChunk(RID, 0, b64encode(b"\x01\x02" * 5000)))
    assert len(out) >= 7
    assert all(utf8_size(m) <= 2048 for m in out)
    with pytest.raises(ValueError):
        TurnFramer("t-1", budget_bytes=100)


def test_nothing_follows_the_terminal_message() -> None:
    framer = TurnFramer("t-1")
    framer.frame(AgentFailed(RID, code="tts_failed", message="speech failed: try again"))
    with pytest.raises(SessionStateError, match="already ended"):
        framer.frame(TextDelta(RID, 0, "late"))
    with pytest.raises(SessionStateError):
        framer.fail("internal_error", "late")


def test_fail_ends_the_turn_with_a_numbered_error() -> None:
    framer = TurnFramer("t-1")
    framer.frame(AgentStart(RID))
    (message,) = framer.fail("agent_unavailable", "the agent is not reachable: try again in a minute")
    assert json.loads(message) == {
        "turn_id": "t-1",
        "seq": 1,
        "code": "agent_unavailable",
        "message": "the agent is not reachable: try again in a minute",
        "type": "error",
    }
    assert framer.finished


def test_bad_audio_raises_without_numbering_anything_so_the_turn_can_still_fail_cleanly() -> None:
    framer = TurnFramer("t-1")
    framer.frame(AudioStreamStart(RID, voice="v"))
    with pytest.raises(AudioFormatError):
        framer.frame(AudioChunk(RID, 0, b64encode(b"\x01\x02\x03")))
    with pytest.raises(AudioFormatError):
        framer.frame(AudioChunk(RID, 0, "not base64!"))
    assert (framer.next_seq, framer.samples) == (1, 0)
    assert json.loads(framer.fail("internal_error", "x")[0])["seq"] == 1


def test_frame_numbered_gives_each_message_its_seq() -> None:
    framer = TurnFramer("t-1", budget_bytes=1024)
    numbered = framer.frame_numbered(TextDelta(RID, 0, "x" * 3000))
    assert [seq for seq, _ in numbered] == list(range(len(numbered)))
    assert [json.loads(m)["seq"] for _, m in numbered] == [seq for seq, _ in numbered]
    assert framer.next_seq == len(numbered)


def test_split_text_to_fit() -> None:
    assert list(split_text_to_fit("", 20)) == []
    assert list(split_text_to_fit("abcdef", 20)) == ["abcdef"]
    assert list(split_text_to_fit("aaaaaaaaaaaaaa", 12)) == ["aaaaaaaaaaaa", "aa"]
    assert list(split_text_to_fit("éééééééé", 12)) == ["éééééé", "éé"]
    with pytest.raises(ValueError):
        list(split_text_to_fit("a", 3))


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.characters(codec="utf-8")), room=st.integers(min_value=12, max_value=200))
def test_split_pieces_fit_their_room_and_join_back(text: str, room: int) -> None:
    pieces = list(split_text_to_fit(text, room))
    assert "".join(pieces) == text
    assert all(piece and utf8_size(json.dumps(piece, ensure_ascii=False)) - 2 <= room for piece in pieces)


@pytest.mark.parametrize("turn_id", ["t-1", "t" * limits.MAX_TURN_ID_CHARS])
def test_an_agent_chunk_of_the_agents_default_size_becomes_exactly_one_client_message(turn_id: str) -> None:
    pcm = bytes(i % 251 for i in range(AUDIO_CHUNK_BYTES))
    framer = TurnFramer(turn_id)
    framer.frame(AudioChunk(RID, 0, b64encode(pcm[:2000])))  # seq, chunk and offset no longer start at 0
    [message] = framer.frame(AudioChunk(RID, 10**6, b64encode(pcm)))
    assert b64decode(json.loads(message)["data"]) == pcm
    assert utf8_size(message) <= limits.CLIENT_FRAME_BUDGET_BYTES


def test_the_agents_chunk_is_the_largest_that_fits_one_message_in_whole_samples() -> None:
    assert max_audio_pcm_bytes() == AUDIO_CHUNK_BYTES and AUDIO_CHUNK_BYTES % limits.SAMPLE_WIDTH_BYTES == 0
    one_sample_more = b"\x01\x00" * (AUDIO_CHUNK_BYTES // 2 + 1)
    wide_id = "t" * limits.MAX_TURN_ID_CHARS
    assert len(TurnFramer(wide_id).frame(AudioChunk(RID, 0, b64encode(one_sample_more)))) == 2


@given(samples=st.integers(min_value=0, max_value=5000), max_bytes=st.integers(min_value=2, max_value=3000))
def test_split_pcm_evenly_uses_as_few_near_equal_pieces_as_fit(samples: int, max_bytes: int) -> None:
    pcm = bytes(i % 256 for i in range(2 * samples))
    pieces = split_pcm_evenly(pcm, max_bytes)
    assert b"".join(pieces) == pcm
    assert all(len(p) <= max_bytes and len(p) % 2 == 0 for p in pieces)
    assert len(pieces) == max(1, -(-samples // (max_bytes // 2)))
    if len(pieces) > 1:
        assert max(map(len, pieces)) - min(map(len, pieces)) <= 2


def test_the_framer_cuts_by_the_streams_codec_and_never_inside_an_opus_packet() -> None:
    framer = TurnFramer("t-1", budget_bytes=1024)
    framer.frame(AudioStreamStart(RID, voice="v", format="opus"))
    assert framer.codec == "opus"
    with pytest.raises(UncuttableAudioError):
        framer.frame(AudioChunk.of_packets(RID, 0, [b"\xfc" * 2000], 480))
    assert (framer.next_seq, framer.samples) == (1, 0)
    pcm_framer = TurnFramer("t-2", budget_bytes=1024)
    pcm_framer.frame(AudioStreamStart(RID, voice="v", format="something_new"))  # unknown formats stay PCM
    pieces = decoded(pcm_framer.frame(AudioChunk(RID, 0, b64encode(b"\x01\x00" * 1000))))
    assert [p["sample_offset"] for p in pieces] == [0, 334, 667] and pcm_framer.samples == 1000
