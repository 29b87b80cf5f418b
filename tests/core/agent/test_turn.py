"""The turn's rules, without I/O: event order, one seq per stream, exactly one terminal event, which outcome wins."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from relay_core.agent.events import (
    AgentEnd,
    AgentErrorCode,
    AgentEvent,
    AgentFailed,
    AgentStart,
    AudioChunk,
    AudioStreamEnd,
    AudioStreamStart,
    SpeechWaiting,
    TextDelta,
    TurnMode,
)
from relay_core.agent.turn import AgentTurn, TurnPhase
from relay_core.audio import b64decode
from relay_core.errors import SessionStateError


def _turn(chunk: int = 8) -> AgentTurn:
    ticks = itertools.count()
    return AgentTurn(request_id="r1", audio_chunk_bytes=chunk, session_id="s", mode=TurnMode.BATCH,
                     model="m", clock=lambda: float(next(ticks)))  # fmt: skip


def test_a_completed_turn_in_order() -> None:
    turn = _turn(chunk=4)
    start = turn.start()
    assert start == AgentStart(request_id="r1", session_id="s", mode="batch", model="m")
    events: list[AgentEvent] = [*turn.text("Hi. "), *turn.text(""), *turn.text("Bye.")]
    turn.sentence_sent()
    events += turn.audio(b"\x01\x00\x02\x00\x03\x00", "jf_alpha")
    events += turn.audio(b"\x04\x00", "jf_alpha")
    events += turn.finish()
    assert [type(e) for e in events] == [
        TextDelta, TextDelta, AudioStreamStart, AudioChunk, AudioChunk, AudioChunk, AudioStreamEnd, AgentEnd
    ]  # fmt: skip
    assert [e.seq for e in events if isinstance(e, TextDelta)] == [0, 1]
    chunks = [e for e in events if isinstance(e, AudioChunk)]
    assert [c.seq for c in chunks] == [0, 1, 2]
    assert b"".join(b64decode(c.data) for c in chunks) == b"\x01\x00\x02\x00\x03\x00\x04\x00"
    assert all(len(b64decode(c.data)) <= 4 for c in chunks)
    stream_start = events[2]
    assert isinstance(stream_start, AudioStreamStart) and stream_start.voice == "jf_alpha"
    stream_end = events[-2]
    assert isinstance(stream_end, AudioStreamEnd) and stream_end.total_chunks == 3
    end = events[-1]
    assert isinstance(end, AgentEnd)
    assert (end.status, end.text_chars, end.sentences) == ("completed", 8, 1)
    assert end.first_audio_s == 1.0  # clock: start at 0, first audio at 1, end at 2
    assert end.elapsed_s == 2.0
    assert turn.phase is TurnPhase.ENDED


def test_no_audio_no_stream_end() -> None:
    turn = _turn()
    turn.start()
    assert [type(e) for e in turn.finish()] == [AgentEnd]


def test_after_a_cancel_nothing_but_the_end() -> None:
    turn = _turn()
    turn.start()
    turn.audio(b"\x00\x00", "v")
    turn.cancel()
    turn.cancel()  # idempotent
    assert turn.text("more") == []
    assert turn.audio(b"\x00\x00", "v") == []
    turn.model_failed("and it failed too")
    events = turn.finish()
    assert [type(e) for e in events] == [AudioStreamEnd, AgentEnd]
    end = events[-1]
    assert isinstance(end, AgentEnd) and end.status == "cancelled"


OUTCOMES = ["internal", "model", "tts", "request"]


def _report(turn: AgentTurn, outcome: str) -> None:
    if outcome == "internal":
        turn.internal_failed("bug")
    elif outcome == "model":
        turn.model_failed("the model failed (ConnectionError)")
    elif outcome == "tts":
        turn.tts_failed(AgentErrorCode.TTS_UNAVAILABLE, "text-to-speech failed: refused")
    else:
        turn.request_failed("synthesis_failed", "boom")


@given(st.lists(st.sampled_from(OUTCOMES), min_size=1, max_size=6))
def test_the_highest_ranked_failure_wins(outcomes: list[str]) -> None:
    turn = _turn()
    turn.start()
    for outcome in outcomes:
        _report(turn, outcome)
    (end,) = turn.finish()
    expected = min(outcomes, key=OUTCOMES.index)
    code = {"internal": "internal_error", "model": "model_failed", "tts": "tts_unavailable", "request": "tts_failed"}
    assert isinstance(end, AgentFailed) and end.code == code[expected]
    if expected == "request":
        assert end.message.startswith(f"{outcomes.count('request')} sentence(s) could not be spoken")
    if expected == "tts":
        assert "delivered without" in end.message


def test_the_first_failure_of_a_kind_wins() -> None:
    turn = _turn()
    turn.start()
    turn.model_failed("first")
    turn.model_failed("second")
    (end,) = turn.finish()
    assert isinstance(end, AgentFailed) and end.message == "first"


@pytest.mark.parametrize("call", ["text", "audio", "finish", "sentence_sent", "model_failed"])
def test_misuse_says_what_to_do(call: str) -> None:
    turn = _turn()
    args = {"text": ("x",), "audio": (b"\x00\x00", "v"), "model_failed": ("m",)}.get(call, ())
    with pytest.raises(SessionStateError, match="call start"):
        getattr(turn, call)(*args)
    turn.start()
    turn.finish()
    with pytest.raises(SessionStateError, match="the turn is over"):
        getattr(turn, call)(*args)
    with pytest.raises(SessionStateError, match="already"):
        turn.start()


def test_audio_chunk_bytes_must_hold_a_sample() -> None:
    with pytest.raises(ValueError, match="at least one sample"):
        AgentTurn(request_id="r", audio_chunk_bytes=1)


def test_speech_waiting_comes_at_most_once_and_only_before_any_audio() -> None:
    turn = _turn()
    turn.start()
    assert turn.speech_waiting(2) == [SpeechWaiting(request_id="r1", position=2)]
    assert turn.speech_waiting(1) == []  # once per turn
    turn.audio(b"\x01\x00", "af_heart")
    late = _turn()
    late.start()
    late.audio(b"\x01\x00", "af_heart")
    assert late.speech_waiting(1) == []  # speech already started: no status to show
    cancelled = _turn()
    cancelled.start()
    cancelled.cancel()
    assert cancelled.speech_waiting(1) == []
    with pytest.raises(SessionStateError):
        _turn().speech_waiting(1)  # before agent_start
