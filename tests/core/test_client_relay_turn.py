"""relay_core.relay_turn: the relay's side of one turn (frame, keep, lose the connection, resume)."""

from __future__ import annotations

import json

import pytest

from relay_core.agent_events import AgentEnd, AgentStart, AudioChunk, AudioStreamStart, TextDelta
from relay_core.audio import b64encode
from relay_core.client_session import ClientSession, TurnEnded, TurnOutcome
from relay_core.errors import InvalidFieldError, ResumeExpiredError
from relay_core.relay_turn import RelayTurn
from relay_core.resume_buffer import ResumeBuffer

RID = "r"


def seqs(messages: list[str]) -> list[int]:
    return [json.loads(m)["seq"] for m in messages]


def test_attached_turn_posts_everything_and_is_done_at_its_end() -> None:
    turn = RelayTurn("t-1", "conn-a")
    assert seqs(turn.frame(AgentStart(RID))) == [0]
    assert seqs(turn.frame(TextDelta(RID, 0, "Hi."))) == [1]
    assert not turn.done(now=0.0)
    assert seqs(turn.frame(AgentEnd(RID))) == [2]
    assert turn.finished and turn.done(now=0.0)
    assert turn.connection_id == "conn-a"


def test_a_lost_connection_buffers_and_a_resume_replays_then_goes_live_on_the_new_connection() -> None:
    turn = RelayTurn("t-1", "conn-a")
    client = ClientSession(collect_audio=True)
    for message in turn.frame(AgentStart(RID)) + turn.frame(TextDelta(RID, 0, "One. ")):
        client.receive(message)
    turn.frame(TextDelta(RID, 1, "Two. "))  # posted, but the client never got it
    turn.connection_lost(now=100.0)
    assert turn.frame(AudioStreamStart(RID, voice="v")) == []
    assert turn.frame(AudioChunk(RID, 0, b64encode(b"\x01\x00"))) == []
    assert not turn.done(now=110.0)

    (resume,) = client.resume_all()
    request = json.loads(resume)
    replay = turn.resume("conn-b", request["after_seq"], now=110.0)
    assert seqs(replay) == [2, 3, 4]
    assert turn.connection_id == "conn-b"
    live = turn.frame(TextDelta(RID, 2, "Three.")) + turn.frame(AgentEnd(RID))
    events = [e for m in replay + live for e in client.receive(m)]
    assert events[-1] == TurnEnded("t-1", TurnOutcome.COMPLETED)
    assert client.turn("t-1").text == "One. Two. Three."
    assert client.turn("t-1").pcm == b"\x01\x00"
    assert turn.done(now=111.0)


def test_a_resume_past_the_window_is_refused_and_the_turn_is_done() -> None:
    turn = RelayTurn("t-1", "conn-a", resume_window_s=30)
    turn.frame(AgentStart(RID))
    turn.connection_lost(now=0.0)
    assert not turn.resume_expired(now=30.0)
    assert turn.resume_expired(now=30.5)
    with pytest.raises(ResumeExpiredError) as info:
        turn.resume("conn-b", 0, now=31.0)
    assert info.value.code == "resume_expired"
    assert turn.done(now=31.0)
    assert turn.connection_id is None


def test_a_finished_turn_whose_last_post_failed_waits_for_a_resume() -> None:
    turn = RelayTurn("t-1", "conn-a")
    turn.frame(AgentStart(RID))
    turn.frame(AgentEnd(RID))
    turn.connection_lost(now=5.0)
    assert not turn.done(now=6.0)
    assert seqs(turn.resume("conn-b", 0, now=7.0)) == [1]
    assert turn.done(now=7.0)


def test_a_resume_into_evicted_messages_or_beyond_the_turn_changes_nothing() -> None:
    turn = RelayTurn("t-1", "conn-a", buffer=ResumeBuffer(max_messages=2))
    for i in range(4):
        turn.frame(TextDelta(RID, i, "x"))
    turn.connection_lost(now=0.0)
    with pytest.raises(ResumeExpiredError):
        turn.resume("conn-b", 0, now=1.0)
    with pytest.raises(InvalidFieldError):
        turn.resume("conn-b", 9, now=1.0)
    assert turn.connection_id is None
    assert seqs(turn.resume("conn-b", 1, now=1.0)) == [2, 3]


def test_a_resume_while_still_attached_switches_connections() -> None:
    turn = RelayTurn("t-1", "conn-a")
    turn.frame(AgentStart(RID))
    turn.frame(TextDelta(RID, 0, "x"))
    assert seqs(turn.resume("conn-b", 0, now=0.0)) == [1]
    assert turn.connection_id == "conn-b"


def test_fail_ends_the_turn_with_a_numbered_error_kept_for_resume() -> None:
    turn = RelayTurn("t-1", "conn-a")
    turn.connection_lost(now=0.0)
    assert turn.fail("agent_unavailable", "the agent is not reachable: try again") == []
    (replay,) = turn.resume("conn-b", -1, now=1.0)
    assert json.loads(replay)["code"] == "agent_unavailable"
    assert json.loads(replay)["seq"] == 0
    assert turn.done(now=1.0)
