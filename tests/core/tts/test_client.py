"""The client side of a TTS session, against frames produced by the real server state machine."""

from __future__ import annotations

import pytest

from relay_core.errors import ProtocolError, SessionStateError
from relay_core.tts.client import AudioReceived, FrameRefused, RequestEnded, TimingsReceived, TtsClientSession
from relay_core.tts.messages import SynthesisCancelled, SynthesisComplete, Synthesize, TtsFailed
from relay_core.tts.session import TtsServerSession
from relay_core.word_timings import WORD_TIMINGS_TYPE, WordTiming, WordTimings, serialize_word_timings


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
            assert event.piece.start_sample == len(got) // 2  # the session's timeline: every sample before it
            got += event.pcm
    assert got == b"\x01\x02\x03\x04\x05\x06"
    assert client.samples == 3


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


def test_word_timings_are_a_message_of_both_session_machines() -> None:
    """The server queues a running request's word_timings in order with its audio; the client hands them over as
    TimingsReceived of that request. Timings of another request, or after a cancel, never go out; a client refuses
    timings that name a request other than the running one."""
    client = TtsClientSession()
    server = TtsServerSession(default_voice="jf_alpha")
    server.receive_frame(client.synthesize(Synthesize(text="One two.", request_id="a", timings=True)))
    assert server.next_request() is not None
    timings = WordTimings("a", (WordTiming("One", 0.0, 0.2), WordTiming("two.", 0.3, 0.5, final=False)))
    server.send_word_timings("a", timings)
    server.send_audio("a", b"\x01\x02")
    server.send_word_timings("a", WordTimings("a", (WordTiming("two.", 0.28, 0.5),), index=1))
    with pytest.raises(SessionStateError):
        server.send_word_timings("a", WordTimings("b", (WordTiming("x", 0, 1),)))
    server.finish_request("a", elapsed_s=0.1, first_audio_s=0.1)
    events = [e for frame in server.data_to_send() for e in client.receive_frame(frame)]
    assert [type(e).__name__ for e in events] == [
        "RequestStarted",
        "TimingsReceived",
        "AudioReceived",
        "TimingsReceived",
        "RequestEnded",
    ]
    assert isinstance(events[1], TimingsReceived) and events[1].timings == timings
    assert isinstance(events[3], TimingsReceived) and events[3].timings.index == 1

    server.receive_frame(client.synthesize(Synthesize(text="Three.", request_id="c", timings=True)))
    assert server.next_request() is not None
    server.receive_frame(client.cancel("c"))
    server.send_word_timings("c", WordTimings("c", (WordTiming("Three.", 0, 1),)))
    assert WORD_TIMINGS_TYPE not in "".join(f for f in server.data_to_send() if isinstance(f, str))

    stray = serialize_word_timings(WordTimings("zzz", (WordTiming("x", 0, 1),)))
    with pytest.raises(ProtocolError, match="running request"):
        TtsClientSession().receive_frame(stray)
