"""The per-request ``first_fragment_words`` field on ``synthesize`` and ``POST /invocations``: optional, a whole
number 0..MAX_FIRST_FRAGMENT_WORDS (0 = no early cut), carried through the session's queue unchanged."""

from __future__ import annotations

import json

import pytest

from relay_core.errors import InvalidFieldError
from relay_core.tts.http_events import parse_invocation
from relay_core.tts.messages import MAX_FIRST_FRAGMENT_WORDS, Synthesize, parse_client_message
from relay_core.tts.session import TtsServerSession


def test_synthesize_carries_the_field_both_ways() -> None:
    message = parse_client_message(json.dumps({"type": "synthesize", "text": "Hi there.", "first_fragment_words": 3}))
    assert isinstance(message, Synthesize)
    assert message.first_fragment_words == 3
    assert message.to_json()["first_fragment_words"] == 3
    assert "first_fragment_words" not in Synthesize(text="Hi.").to_json()
    assert message.with_request_id("r1").first_fragment_words == 3


@pytest.mark.parametrize("value", [-1, MAX_FIRST_FRAGMENT_WORDS + 1, 2.5, "4", True])
def test_bad_values_are_refused_with_the_field_named(value: object) -> None:
    body = json.dumps({"text": "Hi.", "first_fragment_words": value, "request_id": "r9"})
    with pytest.raises(InvalidFieldError, match="first_fragment_words") as caught:
        parse_client_message(body)
    assert caught.value.request_id == "r9"
    with pytest.raises(InvalidFieldError, match="first_fragment_words"):
        parse_invocation(body)


def test_invocation_and_the_session_queue_keep_it() -> None:
    assert parse_invocation(json.dumps({"text": "Hi.", "first_fragment_words": 0})).first_fragment_words == 0
    assert parse_invocation(json.dumps({"text": "Hi."})).first_fragment_words is None
    session = TtsServerSession(default_voice="v")
    session.receive_frame(json.dumps({"text": "Hello there.", "first_fragment_words": 5}))
    request = session.next_request()
    assert request is not None
    assert request.options.voice == "v"
    assert request.first_fragment_words == 5
