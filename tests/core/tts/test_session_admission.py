"""A session that waits for a slot, on both sides of the TTS session protocol: the server's ``queued``, ``admitted``
and ``at_capacity`` as the sans-I/O state machines emit and read them (no sockets)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from relay_core.errors import SessionStateError
from relay_core.tts.client import (
    RequestEnded,
    RequestStarted,
    SessionAtCapacity,
    SessionStarted,
    SessionWaiting,
    TtsClientSession,
)
from relay_core.tts.messages import (
    SessionAdmitted,
    SessionQueued,
    Synthesize,
    TtsErrorCode,
    TtsFailed,
    parse_server_message,
    serialize,
)
from relay_core.tts.session import SessionState, TtsServerSession


def decode(frames: list[str | bytes]) -> list[Any]:
    return [json.loads(f) if isinstance(f, str) else f for f in frames]


def waiting_session() -> TtsServerSession:
    session = TtsServerSession(default_voice="af_heart")
    session.wait_for_admission(position=3, max_wait_s=120)
    return session


def test_the_queued_and_admitted_messages_round_trip() -> None:
    for message in (SessionQueued(position=2, max_wait_s=120.0), SessionAdmitted(waited_s=1.5)):
        assert parse_server_message(serialize(message)) == message
    assert json.loads(serialize(SessionQueued(position=2, max_wait_s=120.0))) == {
        "position": 2,
        "max_wait_s": 120.0,
        "type": "queued",
    }


def test_a_waiting_session_says_queued_first_and_keeps_its_requests_until_admitted() -> None:
    session = waiting_session()
    session.receive_frame('{"text": "One.", "request_id": "a"}')
    session.receive_frame('{"text": "Two.", "request_id": "b"}')
    assert decode(session.data_to_send()) == [{"type": "queued", "position": 3, "max_wait_s": 120}]
    assert session.next_request() is None  # nothing runs before the slot
    assert session.queued_count == 2
    session.admit(waited_s=4.25)
    assert decode(session.data_to_send()) == [{"type": "admitted", "waited_s": 4.25}]
    first = session.next_request()
    assert first is not None and first.request_id == "a"
    session.finish_request("a", elapsed_s=0.1, first_audio_s=0.05)
    second = session.next_request()
    assert second is not None and second.request_id == "b"  # kept in order


def test_while_waiting_requests_are_still_checked_cancel_works_and_close_ends_an_empty_wait() -> None:
    session = waiting_session()
    session.receive_frame('{"text": "   ", "request_id": "blank"}')
    session.receive_frame('{"text": "One.", "request_id": "a"}')
    session.receive_frame('{"type": "cancel", "request_id": "a"}')
    session.receive_frame('{"type": "close"}')
    out = decode(session.data_to_send())
    assert [m["type"] for m in out] == ["queued", "error", "synthesis_cancelled"]
    assert out[1]["rejected"] is True
    assert session.should_close  # nothing left to wait for: the session ends without ever taking a slot


def test_past_the_bound_one_at_capacity_error_ends_every_request_and_closes() -> None:
    session = waiting_session()
    session.receive_frame('{"text": "One.", "request_id": "a"}')
    session.data_to_send()
    session.refuse_at_capacity(waited_s=120.2)
    (error,) = decode(session.data_to_send())
    assert error["type"] == "error" and error["code"] == TtsErrorCode.AT_CAPACITY
    assert error["request_id"] is None and error["rejected"] is False
    assert "try again" in error["message"]
    assert session.state is SessionState.CLOSED and session.should_close
    assert not session.has_pending_work
    session.receive_frame('{"text": "Late.", "request_id": "z"}')
    assert session.data_to_send() == []


def test_admission_calls_out_of_order_are_refused() -> None:
    session = TtsServerSession(default_voice="af_heart")
    with pytest.raises(SessionStateError):
        session.admit(waited_s=0)
    with pytest.raises(SessionStateError):
        session.refuse_at_capacity(waited_s=0)
    session.receive_frame('{"text": "One."}')
    with pytest.raises(SessionStateError):
        session.wait_for_admission(position=1, max_wait_s=1)  # must come before any request


def test_a_session_that_never_waits_sends_neither_message() -> None:
    session = TtsServerSession(default_voice="af_heart")
    session.receive_frame('{"text": "One.", "request_id": "a"}')
    assert session.next_request() is not None
    assert [m["type"] for m in decode(session.data_to_send())] == ["synthesis_start"]


def test_the_client_session_reports_waiting_then_started() -> None:
    client = TtsClientSession()
    server = waiting_session()
    server.receive_frame(client.synthesize(Synthesize(text="One.", request_id="a")))
    events = [e for frame in server.data_to_send() for e in client.receive_frame(frame)]
    assert events == [SessionWaiting(SessionQueued(position=3, max_wait_s=120))]
    assert client.waiting
    server.admit(waited_s=2.0)
    assert server.next_request() is not None
    events = [e for frame in server.data_to_send() for e in client.receive_frame(frame)]
    assert isinstance(events[0], SessionStarted) and events[0].message.waited_s == 2.0
    assert isinstance(events[1], RequestStarted)
    assert not client.waiting


def test_the_client_session_ends_every_pending_request_when_the_session_is_at_capacity() -> None:
    client = TtsClientSession()
    server = waiting_session()
    for rid in ("a", "b"):
        server.receive_frame(client.synthesize(Synthesize(text="One.", request_id=rid)))
    server.refuse_at_capacity(waited_s=5)
    events = [e for frame in server.data_to_send() for e in client.receive_frame(frame)]
    assert isinstance(events[1], SessionAtCapacity) and events[1].error.code == TtsErrorCode.AT_CAPACITY
    ended = events[2:]
    assert [e.request_id for e in ended if isinstance(e, RequestEnded)] == ["a", "b"]
    assert all(isinstance(e, RequestEnded) and isinstance(e.outcome, TtsFailed) for e in ended)
    assert client.idle and not client.waiting


def test_a_request_level_error_is_not_mistaken_for_the_session_one() -> None:
    client = TtsClientSession()
    client.synthesize(Synthesize(text="One.", request_id="a"))
    frame = serialize(TtsFailed(code="synthesis_failed", message="boom", request_id="a"))
    (event,) = client.receive_frame(frame)
    assert isinstance(event, RequestEnded)


def test_a_waiting_session_hears_queued_again_with_its_place_now_until_it_is_admitted() -> None:
    session = waiting_session()
    session.data_to_send()
    session.still_waiting(position=1)
    assert decode(session.data_to_send()) == [{"type": "queued", "position": 1, "max_wait_s": 120}]
    session.admit(waited_s=1.0)
    with pytest.raises(SessionStateError):
        session.still_waiting(position=1)
    closed = waiting_session()
    closed.receive_frame('{"type": "close"}')
    closed.data_to_send()
    closed.still_waiting(position=1)
    assert closed.data_to_send() == []  # a session that closed while waiting hears nothing more
