"""The client side of a TTS session, against frames produced by the real server state machine."""

from __future__ import annotations

import pytest

from relay_core.errors import ProtocolError
from relay_core.tts.client import AudioReceived, FrameRefused, RequestEnded, TtsClientSession
from relay_core.tts.messages import SynthesisCancelled, SynthesisComplete, Synthesize, TtsFailed
from relay_core.tts.session import TtsServerSession


def test_client_and_server_state_machines_agree() -> None:
    client = TtsClientSession()
    server = TtsServerSession(default_voice="jf_alpha")
    server.receive_frame(client.synthesize(Synthesize(text="One.", request_id="a")).encode())
    server.receive_frame(client.synthesize(Synthesize(text="Two.", request_id="b")))
    for rid in ("a", "b"):
        request = server.next_request()
        assert request is not None and request.request_id == rid
        server.send_audio(rid, b"\x01\x02\x03\x04")
        server.finish_request(rid, elapsed_s=0.1, first_audio_s=0.1)
    server.receive_frame(client.close())
    events = [e for frame in server.data_to_send() for e in client.receive_frame(frame)]
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["RequestStarted", "AudioReceived", "RequestEnded"] * 2
    assert isinstance(events[1], AudioReceived) and events[1].request_id == "a"
    assert isinstance(events[2], RequestEnded) and isinstance(events[2].outcome, SynthesisComplete)
    assert client.idle and server.should_close


def test_pcm_split_at_an_odd_byte_is_reassembled_into_whole_samples() -> None:
    client = TtsClientSession()
    client.synthesize(Synthesize(text="x", request_id="a"))
    client.receive_frame(
        '{"type":"synthesis_start","request_id":"a","voice":"v","speed":1.0,'
        '"sample_rate":24000,"encoding":"pcm_s16le","channels":1}'
    )
    got = b""
    for piece in (b"\x01", b"\x02\x03", b"\x04\x05", b"\x06"):
        for event in client.receive_frame(piece):
            assert isinstance(event, AudioReceived)
            assert len(event.pcm) % 2 == 0
            got += event.pcm
    assert got == b"\x01\x02\x03\x04\x05\x06"


def test_errors_cancellations_and_protocol_violations() -> None:
    client = TtsClientSession()
    client.synthesize(Synthesize(text="x", request_id="a"))
    (ended,) = client.receive_frame('{"type":"synthesis_cancelled","request_id":"a"}')
    assert isinstance(ended, RequestEnded) and isinstance(ended.outcome, SynthesisCancelled)
    (other,) = client.receive_frame('{"type":"error","code":"invalid_json","message":"m","request_id":null}')
    assert isinstance(other, FrameRefused) and isinstance(other.error, TtsFailed)
    with pytest.raises(ProtocolError, match="synthesis_start"):
        client.receive_frame(b"\x00\x00")
    with pytest.raises(ProtocolError):
        client.synthesize(Synthesize(text="no id"))
