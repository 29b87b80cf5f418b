"""relay_core.client.session: the client's sans-I/O state machine, driven with messages only."""

from __future__ import annotations

import json

import pytest

from relay_core import limits
from relay_core.agent.events import AgentEnd, AgentFailed, AgentStart, AudioChunk, AudioStreamStart, TextDelta
from relay_core.audio import b64encode
from relay_core.client.framing import TurnFramer
from relay_core.client.messages import (
    ConversationStarted,
    NewConversation,
    Rejection,
    TurnAccepted,
    parse_client_message,
    serialize,
)
from relay_core.client.messages import Resume as ResumeMessage
from relay_core.client.messages import SendMessage as SendMessageMessage
from relay_core.client.session import (
    Accepted,
    AudioReceived,
    AudioStarted,
    ClientSession,
    DuplicateIgnored,
    GapDetected,
    NewConversationStarted,
    Rejected,
    TextReceived,
    TurnEnded,
    TurnOutcome,
    TurnPhase,
    TurnStarted,
)
from relay_core.errors import LimitExceededError, ProtocolError, SessionStateError
from relay_core.speech_options import SpeechOptions

RID = "r"


def turn_messages(turn_id: str, pcm: bytes = b"\x01\x00\x02\x00", *, first_audio_s: float | None = None) -> list[str]:
    framer = TurnFramer(turn_id)
    out: list[str] = []
    for event in (
        AgentStart(RID),
        TextDelta(RID, 0, "Hello, "),
        AudioStreamStart(RID, voice="jf_alpha"),
        AudioChunk(RID, 0, b64encode(pcm)),
        TextDelta(RID, 1, "world."),
        AgentEnd(RID, first_audio_s=first_audio_s),
    ):
        out += framer.frame(event)
    return out


def test_the_end_of_a_turn_carries_the_agents_own_time_to_first_audio() -> None:
    session = ClientSession()
    session.send_message("Hi", turn_id="t-1")
    session.receive(serialize(TurnAccepted("t-1")))
    events = [e for m in turn_messages("t-1", first_audio_s=0.4321) for e in session.receive(m)]
    assert events[-1] == TurnEnded("t-1", TurnOutcome.COMPLETED, agent_first_audio_s=0.4321)


def test_a_turn_is_sent_accepted_streamed_and_ended() -> None:
    session = ClientSession(collect_audio=True)
    sent = parse_client_message(session.send_message("Hi", options=SpeechOptions("jf_alpha"), turn_id="t-1"))
    assert sent == SendMessageMessage("Hi", options=SpeechOptions("jf_alpha"), turn_id="t-1")
    assert session.turn("t-1").phase is TurnPhase.SENT
    assert session.receive(serialize(TurnAccepted("t-1"))) == [Accepted("t-1")]
    assert session.turn("t-1").phase is TurnPhase.ACTIVE
    events = [e for m in turn_messages("t-1") for e in session.receive(m)]
    assert events == [
        TurnStarted("t-1", "bidi", ""),
        TextReceived("t-1", 1, "Hello, "),
        AudioStarted("t-1", "jf_alpha", "pcm_s16le", 24000, 1),
        AudioReceived("t-1", 3, 0, b"\x01\x00\x02\x00"),
        TextReceived("t-1", 4, "world."),
        TurnEnded("t-1", TurnOutcome.COMPLETED),
    ]
    turn = session.turn("t-1")
    assert (turn.text, turn.pcm, turn.samples, turn.last_seq, turn.finished) == (
        "Hello, world.",
        b"\x01\x00\x02\x00",
        2,
        5,
        True,
    )
    assert session.unfinished_turns == []


def test_send_message_picks_a_turn_id_and_refuses_to_reuse_one() -> None:
    session = ClientSession()
    sent = parse_client_message(session.send_message("Hi"))
    assert isinstance(sent, SendMessageMessage) and sent.turn_id
    with pytest.raises(SessionStateError, match="already used"):
        session.send_message("Again", turn_id=sent.turn_id)


def test_audio_is_not_kept_unless_asked() -> None:
    session = ClientSession()
    for message in turn_messages("t-1"):
        session.receive(message)
    assert session.turn("t-1").pcm == b""
    assert session.turn("t-1").samples == 2


def test_duplicates_are_ignored_and_a_gap_holds_back_later_messages_until_resumed() -> None:
    messages = turn_messages("t-1")
    session = ClientSession()
    session.send_message("Hi", turn_id="t-1")
    session.receive(messages[0])
    assert session.receive(messages[0]) == [DuplicateIgnored("t-1", 0)]
    assert session.receive(messages[2]) == [GapDetected("t-1", 1, 2)]
    assert session.receive(messages[3]) == []  # held back: one report per gap
    assert json.loads(session.resume("t-1")) == {"action": "resume", "turn_id": "t-1", "after_seq": 0}
    events = [e for m in messages[1:] for e in session.receive(m)]
    assert [type(e).__name__ for e in events] == [
        "TextReceived",
        "AudioStarted",
        "AudioReceived",
        "TextReceived",
        "TurnEnded",
    ]
    assert session.turn("t-1").text == "Hello, world."
    assert session.receive(messages[-1]) == [DuplicateIgnored("t-1", 5)]


def test_resume_all_after_a_reconnect_asks_for_each_unfinished_turn() -> None:
    session = ClientSession()
    session.send_message("one", turn_id="t-1")
    session.send_message("two", turn_id="t-2")
    for message in turn_messages("t-1")[:3]:
        session.receive(message)
    for message in turn_messages("t-2"):
        session.receive(message)
    assert [parse_client_message(m) for m in session.resume_all()] == [ResumeMessage("t-1", 2)]
    session.send_message("three", turn_id="t-3")
    assert [parse_client_message(m) for m in session.resume_all()] == [
        ResumeMessage("t-1", 2),
        ResumeMessage("t-3", -1),
    ]


def test_resume_misuse_says_what_to_do() -> None:
    session = ClientSession()
    with pytest.raises(SessionStateError, match="no turn"):
        session.resume("t-9")
    for message in turn_messages("t-1"):
        session.receive(message)
    with pytest.raises(SessionStateError, match="already ended"):
        session.resume("t-1")
    with pytest.raises(SessionStateError):
        session.turn("t-9")


def test_a_turn_error_ends_the_turn_as_failed() -> None:
    session = ClientSession()
    framer = TurnFramer("t-1")
    session.receive(framer.frame(AgentStart(RID))[0])
    (message,) = framer.frame(AgentFailed(RID, code="tts_unavailable", message="speech is down: try later"))
    assert session.receive(message) == [
        TurnEnded("t-1", TurnOutcome.FAILED, "tts_unavailable", "speech is down: try later")
    ]
    assert session.turn("t-1").error_code == "tts_unavailable"


def test_a_cancelled_turn_ends_as_cancelled() -> None:
    session = ClientSession()
    framer = TurnFramer("t-1")
    (message,) = framer.frame(AgentEnd(RID, status="cancelled"))
    assert session.receive(message) == [TurnEnded("t-1", TurnOutcome.CANCELLED)]
    assert json.loads(session.cancel("t-1")) == {"action": "cancel", "turn_id": "t-1"}
    assert json.loads(session.cancel()) == {"action": "cancel"}


def test_a_rejected_send_message_ends_the_turn_as_rejected() -> None:
    session = ClientSession()
    session.send_message("Hi", turn_id="t-1")
    rejection = serialize(Rejection("rate_limited", "10 turns a minute: wait a little", "t-1"))
    assert session.receive(rejection) == [
        Rejected("rate_limited", "10 turns a minute: wait a little", "t-1"),
        TurnEnded("t-1", TurnOutcome.REJECTED, "rate_limited", "10 turns a minute: wait a little"),
    ]
    assert session.unfinished_turns == []


def test_a_refused_resume_ends_the_turn_as_expired_and_other_rejections_change_nothing() -> None:
    session = ClientSession()
    for message in turn_messages("t-1")[:2]:
        session.receive(message)
    assert session.receive(serialize(Rejection("invalid_json", "send JSON"))) == [Rejected("invalid_json", "send JSON")]
    assert session.turn("t-1").phase is TurnPhase.ACTIVE
    session.resume("t-1")
    events = session.receive(serialize(Rejection("resume_expired", "too late: send a new message", "t-1")))
    assert events[-1] == TurnEnded("t-1", TurnOutcome.EXPIRED, "resume_expired", "too late: send a new message")


def test_malformed_messages_raise_and_change_nothing() -> None:
    session = ClientSession()
    messages = turn_messages("t-1")
    session.receive(messages[0])
    for bad in ["not json", '{"type":"text_delta","turn_id":"t-1","text":"x"}', '{"type":"nope"}']:
        with pytest.raises(ProtocolError):
            session.receive(bad)
    wrong_offset = json.loads(messages[3])
    wrong_offset["seq"] = 1
    wrong_offset["sample_offset"] = 7
    with pytest.raises(ProtocolError, match="expected 0"):
        session.receive(json.dumps(wrong_offset))
    odd = dict(wrong_offset, sample_offset=0, data=b64encode(b"\x01"))
    with pytest.raises(ProtocolError, match="whole"):
        session.receive(json.dumps(odd))
    assert session.turn("t-1").last_seq == 0
    assert session.receive(messages[1]) == [TextReceived("t-1", 1, "Hello, ")]


def test_a_message_after_the_terminal_one_is_a_protocol_error() -> None:
    session = ClientSession()
    for message in turn_messages("t-1"):
        session.receive(message)
    late = json.dumps({"type": "text_delta", "turn_id": "t-1", "seq": 6, "text": "late"})
    with pytest.raises(ProtocolError, match="after its terminal"):
        session.receive(late)


def test_binary_frames_are_decoded_as_utf8() -> None:
    session = ClientSession()
    assert session.receive(serialize(TurnAccepted("t-1")).encode()) == [Accepted("t-1")]


def test_unknown_turn_for_a_turn_not_yet_accepted_does_not_end_it() -> None:
    session = ClientSession()
    session.send_message("Hi", turn_id="t-1")
    session.receive(serialize(Rejection("unknown_turn", "no such turn", "t-1")))  # e.g. an early cancel
    assert session.turn("t-1").phase is TurnPhase.SENT


def test_send_message_refuses_a_message_larger_than_one_gateway_frame() -> None:
    session = ClientSession()
    prompt = "語" * (limits.APIGW_FRAME_BYTES // 3)  # under MAX_PROMPT_CHARS, but over 32 KB in UTF-8
    with pytest.raises(LimitExceededError, match="shorten the prompt"):
        session.send_message(prompt, turn_id="t-1")
    assert session.turns == []
    fragmenting = ClientSession(max_send_bytes=limits.CLIENT_MESSAGE_MAX_BYTES)
    assert parse_client_message(fragmenting.send_message(prompt, turn_id="t-1")) == SendMessageMessage(
        prompt, turn_id="t-1"
    )


def test_a_turn_the_gateway_closed_over_ends_rejected_and_is_not_resumed() -> None:
    session = ClientSession()
    session.send_message("Hi", turn_id="t-1")
    [ended] = session.closed_too_big("t-1", 40_000)
    assert isinstance(ended, TurnEnded)
    assert (ended.outcome, ended.code) == (TurnOutcome.REJECTED, "limit_exceeded")
    assert ended.message is not None and "(1009, message too big)" in ended.message
    assert "40000-byte sendMessage" in ended.message and ended.message.endswith("shorten the prompt")
    assert session.resume_all() == []
    assert session.closed_too_big("t-1", 40_000) == [], "once"
    assert session.closed_too_big("t-unknown", 1) == []


def test_a_forgotten_turn_frees_its_state_and_ignores_late_duplicates() -> None:
    session = ClientSession(collect_audio=True)
    session.send_message("Hi", turn_id="t-1")
    messages = turn_messages("t-1")
    with pytest.raises(SessionStateError, match="has not ended"):
        session.forget("t-1")
    for message in messages:
        session.receive(message)
    assert session.forget("t-1").text == "Hello, world."
    assert session.turns == []
    assert session.receive(messages[2]) == [DuplicateIgnored("t-1", 2)]
    assert session.receive(serialize(TurnAccepted("t-1"))) == []
    assert session.turns == []
    with pytest.raises(SessionStateError, match="already used"):
        session.send_message("Again", turn_id="t-1")


def test_turn_accepted_after_a_resume_settles_it() -> None:
    session = ClientSession()
    session.send_message("Hi", turn_id="t-1")
    session.receive(turn_messages("t-1")[0])
    session.resume("t-1")
    assert session.receive(serialize(TurnAccepted("t-1"))) == [Accepted("t-1")]
    session.receive(serialize(Rejection("unknown_turn", "no turn is running: nothing to cancel", "t-1")))
    assert session.turn("t-1").phase is TurnPhase.ACTIVE


def test_a_new_conversation_is_pending_until_the_gateway_answers_and_touches_no_turn() -> None:
    session = ClientSession()
    session.send_message("Hi.", turn_id="t-1")
    assert not session.conversation_pending
    assert parse_client_message(session.new_conversation()) == NewConversation()
    assert session.conversation_pending
    assert session.receive(serialize(Rejection("internal_error", "try again"))) == [
        Rejected("internal_error", "try again")
    ]
    assert session.conversation_pending  # a rejection is not the answer
    assert session.receive(serialize(ConversationStarted())) == [NewConversationStarted()]
    assert not session.conversation_pending
    assert session.turn("t-1").phase is TurnPhase.SENT  # the running turn is untouched
