"""A refused frame is told apart from a failed request (``"rejected": true``), on the server and the client."""

from __future__ import annotations

import json

from relay_core.speech_options import SpeechOptions
from relay_core.tts.client import FrameRefused, RequestEnded, TtsClientEvent, TtsClientSession
from relay_core.tts.messages import Synthesize, TtsFailed, parse_server_message, serialize
from relay_core.tts.session import TtsServerSession


def deliver(server: TtsServerSession, client: TtsClientSession) -> list[TtsClientEvent]:
    return [event for frame in server.data_to_send() for event in client.receive_frame(frame)]


def test_every_refusal_is_marked_rejected_and_a_failure_is_not() -> None:
    server = TtsServerSession(default_voice="v")
    server.receive_frame(b"{nope")
    server.receive_frame('{"text": "a", "request_id": "a"}')
    server.receive_frame('{"text": "again", "request_id": "a"}')
    server.receive_frame('{"type": "cancel", "request_id": "ghost"}')
    server.next_request()
    server.fail_request("a", code="synthesis_failed", message="the model failed: retry")
    errors = [json.loads(f) for f in server.data_to_send() if isinstance(f, str) and '"error"' in f]
    assert [(e["code"], e["rejected"]) for e in errors] == [
        ("invalid_json", True),
        ("duplicate_request_id", True),
        ("unknown_request", True),
        ("synthesis_failed", False),
    ]


def test_a_duplicate_id_does_not_end_the_running_request_on_the_client() -> None:
    server = TtsServerSession(default_voice="v")
    client = TtsClientSession()
    server.receive_frame(client.synthesize(Synthesize(text="first", request_id="same")))
    assert server.next_request() is not None
    server.send_audio("same", b"\x01\x00")
    server.receive_frame(client.synthesize(Synthesize(text="second", request_id="same")))
    events = deliver(server, client)
    refusal = events[-1]
    assert isinstance(refusal, FrameRefused)
    assert refusal.error.code == "duplicate_request_id"
    assert client.pending == ["same"]  # the refused copy is forgotten, the running one kept
    assert client.current == "same"
    server.send_audio("same", b"\x02\x00")
    server.finish_request("same", elapsed_s=0.1, first_audio_s=0.05)
    events = deliver(server, client)
    assert [type(e).__name__ for e in events] == ["AudioReceived", "RequestEnded"]
    assert client.idle


def test_a_refused_request_that_never_started_ends_on_the_client() -> None:
    def check_voice(voice: str) -> None:
        from relay_core.errors import ProtocolError  # noqa: PLC0415

        if voice != "v":
            raise ProtocolError(f"unknown voice {voice!r}: use v", code="unknown_voice")

    server = TtsServerSession(default_voice="v", check_voice=check_voice)
    client = TtsClientSession()
    server.receive_frame(
        client.synthesize(Synthesize(text="hi", options=SpeechOptions(voice="nobody"), request_id="r"))
    )
    (ended,) = deliver(server, client)
    assert isinstance(ended, RequestEnded)
    assert isinstance(ended.outcome, TtsFailed) and ended.outcome.rejected
    assert client.idle


def test_rejected_survives_a_round_trip_and_defaults_to_false() -> None:
    refused = TtsFailed(code="queue_full", message="wait", request_id="r", rejected=True)
    assert parse_server_message(serialize(refused)) == refused
    assert json.loads(serialize(refused))["rejected"] is True
    legacy = parse_server_message('{"type": "error", "code": "synthesis_failed", "message": "m", "request_id": "r"}')
    assert isinstance(legacy, TtsFailed) and legacy.rejected is False


def test_text_the_engine_cannot_speak_is_refused_before_queueing() -> None:
    checked: list[SpeechOptions] = []

    def check_text(text: str, options: SpeechOptions) -> None:
        from relay_core.errors import ProtocolError  # noqa: PLC0415

        checked.append(options)
        if "日本" in text and options.lang != "ja":
            raise ProtocolError("Japanese script: send Latin script", code="unsupported_text")

    server = TtsServerSession(default_voice="v", check_text=check_text)
    server.receive_frame('{"text": "日本語", "request_id": "ja"}')
    server.receive_frame('{"text": "Hello.", "request_id": "en"}')
    server.receive_frame('{"text": "日本語", "request_id": "ja2", "lang": "j", "voice": "w"}')
    (refusal,) = [json.loads(f) for f in server.data_to_send()]
    assert (refusal["code"], refusal["request_id"], refusal["rejected"]) == ("unsupported_text", "ja", True)
    assert server.queued_count == 2
    assert checked == [SpeechOptions("v"), SpeechOptions("v"), SpeechOptions("w", lang="ja")], "voice filled in"
