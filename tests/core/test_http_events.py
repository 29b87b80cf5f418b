"""The HTTP request rules (``POST /invocations``): the same request-id and text rules as the WebSocket, one HTTP
status per error code, and error wording about request bodies."""

from __future__ import annotations

import json

import pytest

from relay_core import limits
from relay_core.errors import InvalidFieldError, InvalidJsonError, LimitExceededError, ProtocolError
from relay_core.http_events import HTTP_STATUS, http_status, parse_invocation
from relay_core.tts_messages import TtsErrorCode, parse_client_message


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
