"""Captions through the client protocol: ``sendMessage`` asks for timings, ``cancel`` says how much was played,
the gateway relays the agent's ``word_timings`` as numbered turn messages (split to fit the frame budget), and
the client session surfaces them in order, resume included."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relay_core import limits
from relay_core.agent.events import AgentEnd, AgentPayload, TextDelta
from relay_core.client.framing import TurnFramer, utf8_size
from relay_core.client.messages import Cancel, SendMessage, TurnAccepted, parse_client_message, serialize
from relay_core.client.session import ClientSession, DuplicateIgnored, WordsReceived
from relay_core.client.turn_messages import TurnMessage, parse_server_message, serialize_server_message
from relay_core.errors import InvalidFieldError
from relay_core.word_timings import MAX_PLAYED_MS, MAX_WORD_CHARS, WordTiming, WordTimings

TURN = "t-captions"


def timings(words: list[str], *, start_s: float = 0.0, step_s: float = 0.25) -> WordTimings:
    return WordTimings(
        TURN,
        tuple(
            WordTiming(w, round(start_s + i * step_s, 3), round(start_s + i * step_s + 0.2, 3))
            for i, w in enumerate(words)
        ),
    )


def test_send_message_asks_for_timings_only_when_told() -> None:
    plain = SendMessage("Hello.", turn_id=TURN)
    assert "timings" not in plain.to_json(), "without timings the wire is what it was"
    assert plain.to_agent_payload() == AgentPayload(prompt="Hello.", request_id=TURN)
    asked = SendMessage("Hello.", turn_id=TURN, timings=True)
    assert asked.to_json()["timings"] is True
    assert asked.to_agent_payload().timings is True
    assert parse_client_message(serialize(asked)) == asked
    assert asked.with_turn_id("t-other").timings is True
    with pytest.raises(InvalidFieldError, match="timings"):
        parse_client_message({"action": "sendMessage", "prompt": "hi", "timings": "yes"})


def test_cancel_may_carry_played_ms_checked_by_the_agent_rule() -> None:
    assert serialize(Cancel(TURN)) == json.dumps({"action": "cancel", "turn_id": TURN}, separators=(",", ":"))
    cancel = parse_client_message({"action": "cancel", "turn_id": TURN, "played_ms": 1234.4})
    assert cancel == Cancel(TURN, played_ms=1234)
    assert parse_client_message(serialize(cancel)) == cancel
    for bad in (-1, MAX_PLAYED_MS + 1, "12", True):
        with pytest.raises(InvalidFieldError, match="played_ms"):
            parse_client_message({"action": "cancel", "played_ms": bad})
    with pytest.raises(InvalidFieldError, match="played_ms"):
        Cancel(played_ms=-5)


def test_word_timings_become_one_numbered_message_that_parses_back() -> None:
    framer = TurnFramer(TURN)
    framer.frame(TextDelta(TURN, 0, "Hello there."))
    event = timings(["Hello", "there."])
    [message] = framer.frame(event)
    parsed = parse_server_message(message)
    assert parsed == TurnMessage(TURN, 1, WordTimings(TURN, event.words))
    assert json.loads(serialize_server_message(parsed)) == json.loads(message)
    assert json.loads(message)["type"] == "word_timings"
    assert framer.frame(WordTimings(TURN, ())) == [], "no words, no message"
    assert framer.next_seq == 2


@settings(max_examples=25, deadline=None)
@given(
    words=st.lists(
        st.text(st.characters(blacklist_categories=("Cs", "Zs", "Cc")), min_size=1, max_size=MAX_WORD_CHARS),
        min_size=1,
        max_size=300,
    ),
    budget=st.sampled_from([1024, 4096, limits.CLIENT_FRAME_BUDGET_BYTES]),
)
def test_many_words_split_across_messages_in_order_under_the_budget(words: list[str], budget: int) -> None:
    framer = TurnFramer(TURN, budget_bytes=budget)
    event = timings(words)
    messages = framer.frame(event)
    assert all(utf8_size(m) <= budget for m in messages)
    parsed = [parse_server_message(m) for m in messages]
    timed = [p for p in parsed if isinstance(p, TurnMessage) and isinstance(p.event, WordTimings)]
    assert len(timed) == len(parsed)
    assert [p.seq for p in timed] == list(range(len(messages)))
    joined = [w for p in timed if isinstance(p.event, WordTimings) for w in p.event.words]
    assert [(w.start_s, w.end_s) for w in joined] == [(w.start_s, w.end_s) for w in event.words]
    assert all(
        got.word == want.word or want.word.startswith(got.word) for got, want in zip(joined, event.words, strict=True)
    )


def test_a_full_segment_of_words_takes_several_frames_of_the_real_budget() -> None:
    words = [f"wörd{i:03d}-" + "x" * 150 for i in range(limits.MAX_PHONEME_TOKENS)]
    messages = TurnFramer(TURN).frame(timings(words))
    assert len(messages) > 1
    assert all(utf8_size(m) <= limits.CLIENT_FRAME_BUDGET_BYTES for m in messages)
    got = [w.word for m in messages for w in parse_server_message(m).event.words]  # type: ignore[union-attr]
    assert got == words


def test_the_client_session_surfaces_words_once_in_order_across_a_resume() -> None:
    session = ClientSession()
    session.send_message("Hello there. Bye.", turn_id=TURN, timings=True)
    framer = TurnFramer(TURN)
    first, second = timings(["Hello", "there."]), timings(["Bye."], start_s=1.0)
    stream = [*framer.frame(first), *framer.frame(TextDelta(TURN, 0, "Hi")), *framer.frame(second)]
    stream += framer.frame(AgentEnd(TURN))
    events = [e for m in [serialize(TurnAccepted(TURN)), *stream[:2], *stream] for e in session.receive(m)]
    words = [e for e in events if isinstance(e, WordsReceived)]
    assert [w.words for w in words] == [first.words, second.words]
    assert sum(isinstance(e, DuplicateIgnored) for e in events) == 2
    assert session.turn(TURN).words == [*first.words, *second.words]
    assert json.loads(session.cancel(TURN, played_ms=750)) == {"action": "cancel", "turn_id": TURN, "played_ms": 750}
