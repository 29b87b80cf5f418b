"""Agent events (§3) with word timings: the opt-in payload flag, the cancel's played_ms, the word_timings event, and
the client framing that relays it as a numbered turn message."""

from __future__ import annotations

import pytest

from relay_core.agent.events import (
    AgentCancel,
    AgentPayload,
    TextDelta,
    event_to_json,
    parse_event,
    parse_request,
    serialize_event,
)
from relay_core.client.framing import TurnFramer
from relay_core.errors import InvalidFieldError
from relay_core.word_timings import WordTiming, WordTimings

TIMINGS = WordTimings("turn-1", (WordTiming("Hello,", 0.1, 0.4), WordTiming("world.", 0.5, 0.9)))


def test_word_timings_is_an_agent_event() -> None:
    assert event_to_json(TIMINGS)["type"] == "word_timings"
    assert parse_event(serialize_event(TIMINGS)) == TIMINGS
    with pytest.raises(InvalidFieldError):
        parse_event({"type": "word_timings", "request_id": "t", "words": [{"word": "x"}]})


def test_timings_are_asked_for_in_the_payload_and_off_by_default() -> None:
    assert parse_request({"prompt": "hi"}) == AgentPayload(prompt="hi")
    asked = AgentPayload(prompt="hi", timings=True)
    assert asked.to_json()["timings"] is True
    assert "timings" not in AgentPayload(prompt="hi").to_json()
    assert parse_request(asked.to_json()) == asked
    with pytest.raises(InvalidFieldError, match="timings"):
        parse_request({"prompt": "hi", "timings": "yes"})


def test_a_cancel_may_say_how_much_was_played() -> None:
    assert parse_request({"action": "cancel"}) == AgentCancel()
    cancel = AgentCancel(request_id="t1", played_ms=2350)
    assert cancel.to_json() == {"action": "cancel", "request_id": "t1", "played_ms": 2350}
    assert parse_request(cancel.to_json()) == cancel
    with pytest.raises(InvalidFieldError, match="played_ms"):
        parse_request({"action": "cancel", "played_ms": -5})


def test_the_client_framing_numbers_timings_like_any_message() -> None:
    framer = TurnFramer("turn-1")
    assert len(framer.frame(TIMINGS)) == 1
    assert framer.last_seq == 0
    assert len(framer.frame(TextDelta("turn-1", 0, "hi"))) == 1
    assert framer.last_seq == 1
