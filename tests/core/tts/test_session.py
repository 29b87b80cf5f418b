"""The server session state machine, driven with bytes and events only (no sockets)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from relay_core.errors import ProtocolError, SessionStateError
from relay_core.tts.session import SessionState, TtsServerSession


def decode(frames: list[str | bytes]) -> list[Any]:
    return [json.loads(f) if isinstance(f, str) else f for f in frames]


def types(frames: list[str | bytes]) -> list[str]:
    return [f["type"] if isinstance(f, dict) else "pcm" for f in decode(frames)]


def check_voice(voice: str) -> None:
    if voice not in {"jf_alpha", "jm_kumo"}:
        raise ProtocolError(f"unknown voice {voice!r}: use one of jf_alpha, jm_kumo", code="unknown_voice")


def make_session() -> TtsServerSession:
    ids = iter(f"auto{i}" for i in range(100))
    return TtsServerSession(default_voice="jf_alpha", check_voice=check_voice, new_request_id=lambda: next(ids))


def run_one(session: TtsServerSession, pcm: list[bytes]) -> str:
    request = session.next_request()
    assert request is not None and request.request_id is not None
    for chunk in pcm:
        if session.is_cancelled(request.request_id):
            break
        session.send_audio(request.request_id, chunk)
    session.finish_request(request.request_id, elapsed_s=0.1, first_audio_s=0.05)
    return request.request_id


def test_requests_run_in_order_with_ids_echoed_and_pcm_between_start_and_complete() -> None:
    session = make_session()
    session.receive_frame(b'{"text": "One.", "request_id": "a"}')
    session.receive_frame('{"type": "synthesize", "text": "Two."}')
    assert session.data_to_send() == []
    assert run_one(session, [b"\x01\x00" * 4, b"\x02\x00" * 2]) == "a"
    assert run_one(session, [b"\x03\x00"]) == "auto0"
    out = decode(session.data_to_send())
    assert [o["type"] if isinstance(o, dict) else o for o in out] == [
        "synthesis_start",
        b"\x01\x00" * 4,
        b"\x02\x00" * 2,
        "synthesis_complete",
        "synthesis_start",
        b"\x03\x00",
        "synthesis_complete",
    ]
    assert out[0]["request_id"] == out[3]["request_id"] == "a"
    assert out[0]["voice"] == "jf_alpha"
    assert out[3]["audio_bytes"] == 12 and out[3]["segments"] == 2
    assert out[3]["total_duration_s"] == pytest.approx(6 / 24000, abs=1e-4)
    assert out[4]["request_id"] == out[6]["request_id"] == "auto0"


def test_bad_input_answers_an_error_and_the_session_goes_on() -> None:
    session = make_session()
    session.receive_frame(b"\xff not json")
    session.receive_frame('{"text": "hi", "speed": 5, "request_id": "s"}')
    session.receive_frame('{"text": "hi", "voice": "nobody", "request_id": "v"}')
    session.receive_frame('{"text": "fine", "request_id": "ok"}')
    out = decode(session.data_to_send())
    assert [o["code"] for o in out] == ["invalid_json", "invalid_field", "unknown_voice"]
    assert [o["request_id"] for o in out] == [None, "s", "v"]
    assert "jf_alpha" in out[2]["message"]
    assert run_one(session, [b"\x00\x00"]) == "ok"
    assert session.state is SessionState.OPEN


def test_duplicate_request_ids_are_rejected() -> None:
    session = make_session()
    session.receive_frame('{"text": "a", "request_id": "same"}')
    session.receive_frame('{"text": "b", "request_id": "same"}')
    assert decode(session.data_to_send())[0]["code"] == "duplicate_request_id"
    assert session.queued_count == 1


def test_cancel_queued_and_running() -> None:
    session = make_session()
    for rid in ("a", "b", "c"):
        session.receive_frame(json.dumps({"text": rid, "request_id": rid}))
    request = session.next_request()
    assert request is not None and request.request_id == "a"
    session.send_audio("a", b"\x01\x00")
    session.receive_frame('{"type": "cancel", "request_id": "b"}')
    session.receive_frame('{"type": "cancel", "request_id": "a"}')
    assert session.is_cancelled("a")
    session.send_audio("a", b"\x02\x00")  # dropped: cancelled
    session.finish_request("a", elapsed_s=0.1, first_audio_s=0.01)
    out = decode(session.data_to_send())
    assert types(session_frames := [json.dumps(o) if isinstance(o, dict) else o for o in out]) == [
        "synthesis_start",
        "pcm",
        "synthesis_cancelled",
        "synthesis_cancelled",
    ], session_frames
    assert [out[2]["request_id"], out[3]["request_id"]] == ["b", "a"]
    assert run_one(session, []) == "c"


def test_cancel_all_and_unknown_request() -> None:
    session = make_session()
    session.receive_frame('{"text": "a", "request_id": "a"}')
    session.receive_frame('{"text": "b", "request_id": "b"}')
    session.next_request()
    session.receive_frame('{"type": "cancel"}')
    session.receive_frame('{"type": "cancel", "request_id": "zzz"}')
    session.finish_request("a", elapsed_s=0, first_audio_s=None)
    out = decode(session.data_to_send())
    assert [(o["type"], o.get("request_id")) for o in out] == [
        ("synthesis_start", "a"),
        ("synthesis_cancelled", "b"),
        ("error", "zzz"),
        ("synthesis_cancelled", "a"),
    ]
    assert session.next_request() is None


def test_close_finishes_the_queue_then_closes_with_1000() -> None:
    session = make_session()
    session.receive_frame('{"text": "a", "request_id": "a"}')
    session.receive_frame('{"type": "close"}')
    assert not session.should_close
    session.receive_frame('{"text": "late", "request_id": "late"}')
    assert decode(session.data_to_send())[0]["code"] == "session_closing"
    run_one(session, [b"\x00\x00"])
    assert session.should_close and session.close_code == 1000
    session.receive_frame('{"text": "after"}')
    assert types(session.data_to_send()) == ["synthesis_start", "pcm", "synthesis_complete"]


def test_close_when_idle_closes_at_once() -> None:
    session = make_session()
    session.receive_frame(b'{"type": "close"}')
    assert session.should_close


def test_failed_request_yields_error_and_next_runs() -> None:
    session = make_session()
    session.receive_frame('{"text": "a", "request_id": "a"}')
    session.receive_frame('{"text": "b", "request_id": "b"}')
    session.next_request()
    session.fail_request("a", code="synthesis_failed", message="engine failed: retry")
    assert run_one(session, [b"\x00\x00"]) == "b"
    out = decode(session.data_to_send())
    assert (out[1]["type"], out[1]["request_id"], out[1]["code"]) == ("error", "a", "synthesis_failed")


def test_misuse_raises_errors_that_say_what_to_do() -> None:
    session = make_session()
    with pytest.raises(SessionStateError, match="next_request"):
        session.send_audio("nope", b"\x00\x00")
    session.receive_frame('{"text": "a", "request_id": "a"}')
    session.receive_frame('{"text": "b", "request_id": "b"}')
    session.next_request()
    with pytest.raises(SessionStateError, match="finish_request"):
        session.next_request()
    with pytest.raises(SessionStateError, match="even"):
        session.send_audio("a", b"\x00")


def test_queue_limit() -> None:
    session = TtsServerSession(default_voice="v", max_queued=2)
    for i in range(3):
        session.receive_frame(json.dumps({"text": "x", "request_id": str(i)}))
    out = decode(session.data_to_send())
    assert [o["code"] for o in out] == ["queue_full"]
    assert out[0]["request_id"] == "2"
