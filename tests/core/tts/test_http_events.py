"""The HTTP request rules (``POST /invocations``): the same request-id and text rules as the WebSocket, one HTTP
status per error code, and error wording about request bodies."""

from __future__ import annotations

import json

import pytest

from relay_core import limits
from relay_core.errors import InvalidFieldError, InvalidJsonError, LimitExceededError, ProtocolError
from relay_core.speech_options import SpeechOptions
from relay_core.tts.http_events import (
    HTTP_STATUS,
    AudioFormat,
    OpenAiStreamFormat,
    http_status,
    parse_invocation,
    parse_openai_speech,
)
from relay_core.tts.messages import TtsErrorCode, parse_client_message


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"request_id": ""}, InvalidFieldError),
        ({"request_id": "tab\there"}, InvalidFieldError),
        ({"request_id": "r" * (limits.MAX_REQUEST_ID_CHARS + 1)}, LimitExceededError),
        ({"text": "x" * (limits.MAX_TEXT_CHARS + 1)}, LimitExceededError),
        ({"text": "   "}, InvalidFieldError),
    ],
)
def test_http_and_websocket_apply_one_rule(fields: dict[str, str], error: type[ProtocolError]) -> None:
    body = json.dumps({"text": "Hello.", **fields})
    with pytest.raises(error) as over_http:
        parse_invocation(body)
    with pytest.raises(error) as over_ws:
        parse_client_message(body)
    assert over_http.value.code == over_ws.value.code
    assert http_status(over_http.value.code) == (413 if error is LimitExceededError else 400)


def test_every_error_code_has_one_http_status() -> None:
    assert set(HTTP_STATUS) == set(TtsErrorCode)
    assert HTTP_STATUS[TtsErrorCode.LIMIT_EXCEEDED] == 413
    assert HTTP_STATUS[TtsErrorCode.MODEL_NOT_READY] == 503
    assert http_status("no_such_code") == 500


@pytest.mark.parametrize("body", [b"{nope", b"[1]", json.dumps({"text": "x" * limits.MAX_MESSAGE_BYTES}).encode()])
def test_http_errors_speak_of_request_bodies_not_frames(body: bytes) -> None:
    with pytest.raises((InvalidJsonError, LimitExceededError)) as info:
        parse_invocation(body)
    assert "request body" in info.value.message
    assert "frame" not in info.value.message


def test_openai_speech_body_names_openai_fields() -> None:
    parsed = parse_openai_speech(
        json.dumps({"model": "tts-1", "input": "Hi.", "voice": "alloy", "speed": 0.25, "stream_format": "SSE"})
    )
    assert (parsed.input, parsed.options, parsed.format) == ("Hi.", SpeechOptions("alloy", 0.25), AudioFormat.MP3)
    assert parsed.stream_format is OpenAiStreamFormat.SSE
    assert parse_openai_speech(json.dumps({"input": "Hi.", "speed": 4.0, "response_format": "aac"})).format == (
        AudioFormat.AAC
    )
    for body, field in [
        ({"input": ""}, "'input'"),
        ({"text": "Hi."}, "'input'"),
        ({"input": "x" * (limits.MAX_TEXT_CHARS + 1)}, "'input'"),
        ({"input": "Hi.", "response_format": "wma"}, "'response_format'"),
        ({"input": "Hi.", "speed": 4.01}, "'speed'"),
        ({"input": "Hi.", "response_format": "flac", "bitrate_kbps": 64}, "'bitrate_kbps'"),
    ]:
        with pytest.raises(ProtocolError) as info:
            parse_openai_speech(json.dumps(body))
        assert field in info.value.message


def test_bitrate_is_for_lossy_formats_within_bounds() -> None:
    assert parse_invocation(json.dumps({"text": "Hi.", "format": "mp3", "bitrate_kbps": 64})).bitrate_kbps == 64
    for value in (limits.MIN_BITRATE_KBPS - 1, limits.MAX_BITRATE_KBPS + 1, 64.5, True):
        with pytest.raises(InvalidFieldError, match="bitrate_kbps"):
            parse_invocation(json.dumps({"text": "Hi.", "format": "opus", "bitrate_kbps": value}))
