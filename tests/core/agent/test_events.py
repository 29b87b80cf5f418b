"""Agent events and payload (ARCHITECTURE §3)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relay_core.agent.events import (
    AgentCancel,
    AgentEnd,
    AgentFailed,
    AgentStart,
    AudioChunk,
    AudioStreamEnd,
    AudioStreamStart,
    TextDelta,
    TurnMode,
    is_cancel,
    parse_cancel,
    parse_event,
    parse_payload,
    serialize_event,
)
from relay_core.audio_piece import AudioPiece
from relay_core.errors import AudioFormatError, InvalidFieldError, ProtocolError
from relay_core.speech_options import SpeechOptions


@pytest.mark.parametrize(
    "event",
    [
        AgentStart(request_id="r", session_id="s" * 40, mode="bidi", model="speak"),
        TextDelta(request_id="r", seq=0, text="Hel"),
        AudioStreamStart(request_id="r", voice="jf_alpha"),
        AudioChunk(request_id="r", seq=3, data="AAA="),
        AudioStreamEnd(request_id="r", total_chunks=4, duration_s=1.2),
        AgentEnd(request_id="r", status="cancelled", first_audio_s=None),
        AgentFailed(request_id="r", code="tts_unavailable", message="start the container"),
    ],
)
def test_events_round_trip_and_carry_request_id(event: object) -> None:
    frame = serialize_event(event)  # type: ignore[arg-type]
    assert json.loads(frame)["request_id"] == "r"
    assert parse_event(frame) == event


def test_payload_defaults_and_errors() -> None:
    payload = parse_payload('{"prompt": "Hi"}')
    assert payload.mode is TurnMode.BIDI and payload.options == SpeechOptions()
    assert parse_payload(payload.to_json()) == payload
    assert parse_payload({"prompt": "x", "mode": "batch", "voice": "jm_kumo"}).mode is TurnMode.BATCH
    with pytest.raises(InvalidFieldError, match="bidi"):
        parse_payload({"prompt": "x", "mode": "fast"})
    with pytest.raises(InvalidFieldError, match="prompt"):
        parse_payload({"prompt": "  "})


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["type", "request_id", "seq", "text", "data", "x"]),
        st.none() | st.integers() | st.text(max_size=5),
        max_size=5,
    )
)
def test_event_parser_never_raises_foreign_errors(obj: dict[str, object]) -> None:
    try:
        parse_event(json.dumps(obj))
    except ProtocolError:
        pass


@pytest.mark.parametrize(
    "frame",
    [
        '{"type": "text_delta", "request_id": "r", "seq": "1", "text": "x"}',
        '{"type": "audio_chunk", "request_id": "r", "seq": true, "data": "AA=="}',
        '{"type": "agent_end", "request_id": 5}',
        '{"type": "agent_end", "request_id": ""}',
        '{"type": "audio_stream_end", "request_id": "r", "total_chunks": 1}',
        '{"type": "nope", "request_id": "r"}',
    ],
)
def test_malformed_events_are_rejected(frame: str) -> None:
    with pytest.raises(ProtocolError):
        parse_event(frame)


def test_cancel_requests() -> None:
    assert is_cancel(AgentCancel().to_json())
    assert not is_cancel({"prompt": "hi"})
    assert not is_cancel("cancel")
    assert parse_cancel(AgentCancel(request_id="t1").to_json()) == AgentCancel(request_id="t1")
    assert parse_cancel({"action": "cancel"}) == AgentCancel()
    with pytest.raises(InvalidFieldError, match="request_id"):
        parse_cancel({"action": "cancel", "request_id": 7})


def test_an_audio_chunk_carries_a_piece_and_gives_it_back_on_its_sample_offset() -> None:
    piece = AudioPiece.pcm(b"\x01\x00\x02\x00\x03\x00", start_sample=480)
    agent_wire = AudioChunk.of_piece("r", 4, piece)
    client_wire = AudioChunk.of_piece("r", 4, piece, client_wire=True)
    assert (agent_wire.sample_offset, client_wire.sample_offset, agent_wire.data) == (None, 480, "AQACAAMA")
    assert client_wire.piece() == piece and agent_wire.piece() == piece.at(0)
    assert agent_wire.piece(start_sample=480).end_sample == 483
    with pytest.raises(AudioFormatError):
        AudioChunk("r", 0, "AQAC").piece()  # three bytes: half a sample
