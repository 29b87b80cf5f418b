"""The TTS session's memory of request ids is bounded, and a live request's id is still refused."""

from __future__ import annotations

import json

from relay_core.tts.session import TtsServerSession


def _synthesize(rid: str) -> str:
    return json.dumps({"type": "synthesize", "text": "Hi.", "request_id": rid})


def _errors(session: TtsServerSession) -> list[dict[str, object]]:
    frames = [json.loads(f) for f in session.data_to_send() if isinstance(f, str)]
    return [f for f in frames if f["type"] == "error"]


def test_remembered_ids_are_bounded_and_live_ids_still_refused() -> None:
    session = TtsServerSession(default_voice="v", max_remembered_ids=3)
    session.receive_frame(_synthesize("live"))
    for n in range(10):
        session.receive_frame(_synthesize(f"r{n}"))
    assert len(session._seen_ids) == 3  # the bound is what this test is about
    assert _errors(session) == []
    session.receive_frame(_synthesize("live"))  # forgotten by the memory, but still queued
    session.receive_frame(_synthesize("r9"))  # remembered
    assert [e["code"] for e in _errors(session)] == ["duplicate_request_id", "duplicate_request_id"]
