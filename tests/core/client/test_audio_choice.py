"""The audio choice (``audio``: pcm | opus) on sendMessage and the agent payload, and Opus turn messages parsed."""

from __future__ import annotations

import pytest

from relay_core.agent.events import AgentPayload, AudioChunk, parse_event, parse_payload, serialize_event
from relay_core.audio_piece import AudioChoice, Codec
from relay_core.client.messages import SendMessage, parse_client_message
from relay_core.errors import InvalidFieldError


def test_send_message_defaults_to_pcm_and_leaves_the_field_out() -> None:
    message = parse_client_message({"action": "sendMessage", "prompt": "hi"})
    assert isinstance(message, SendMessage) and message.audio is AudioChoice.PCM
    assert "audio" not in message.to_json()
    assert message.to_agent_payload("t-1").audio is AudioChoice.PCM


def test_send_message_asks_for_opus_and_the_agent_payload_carries_it() -> None:
    message = parse_client_message({"action": "sendMessage", "prompt": "hi", "audio": "opus"})
    assert isinstance(message, SendMessage) and message.audio is AudioChoice.OPUS
    assert message.to_json()["audio"] == "opus"
    payload = message.to_agent_payload("t-1")
    assert payload.audio is AudioChoice.OPUS and payload.to_json()["audio"] == "opus"
    assert parse_payload(payload.to_json()) == payload
    assert AudioChoice.OPUS.codec is Codec.OPUS and AudioChoice.PCM.codec is Codec.PCM_S16LE


@pytest.mark.parametrize("value", ["mp3", "OPUS", "", 1, True, ["opus"]])
def test_any_other_audio_value_is_refused_naming_the_allowed_ones(value: object) -> None:
    with pytest.raises(InvalidFieldError, match="'pcm' or 'opus'"):
        parse_client_message({"action": "sendMessage", "prompt": "hi", "audio": value})
    with pytest.raises(InvalidFieldError, match="'pcm' or 'opus'"):
        parse_payload({"prompt": "hi", "audio": value})


def test_a_pcm_payload_serializes_as_before() -> None:
    assert "audio" not in AgentPayload("hi").to_json()


def test_an_opus_agent_chunk_round_trips_with_its_packets() -> None:
    chunk = AudioChunk.of_packets("r", 3, [b"\x01\x02", b"\x03"], 500)
    again = parse_event(serialize_event(chunk))
    assert again == chunk and again.packets() == [b"\x01\x02", b"\x03"]
    assert again.piece().samples == 500


@pytest.mark.parametrize("bad", [[], [0], [1, -2], "3", [True]])
def test_bad_packet_bytes_are_refused(bad: object) -> None:
    with pytest.raises(InvalidFieldError, match="packet_bytes"):
        parse_event({"type": "audio_chunk", "request_id": "r", "seq": 0, "data": "AQID", "packet_bytes": bad})
