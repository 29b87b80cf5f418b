"""Property tests of the client protocol: any agent turn, framed by TurnFramer, kept by ResumeBuffer and
received by ClientSession through a lossy, repeating connection with resumes, arrives whole and exactly once."""

from __future__ import annotations

import json
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from relay_core import limits
from relay_core.agent.events import (
    AgentEnd,
    AgentEvent,
    AgentEventType,
    AgentFailed,
    AgentStart,
    AudioChunk,
    AudioStreamEnd,
    AudioStreamStart,
    TextDelta,
)
from relay_core.audio import b64encode
from relay_core.client.framing import TurnFramer, utf8_size
from relay_core.client.messages import ClientAction, ClientErrorCode, Resume, parse_client_message, serialize
from relay_core.client.session import (
    AudioReceived,
    ClientEvent,
    ClientSession,
    DuplicateIgnored,
    GapDetected,
    TextReceived,
    TurnEnded,
    TurnOutcome,
)
from relay_core.client.turn_messages import TurnMessage, parse_server_message
from relay_core.errors import ProtocolError
from relay_core.relay.resume_buffer import ResumeBuffer

RID = "r"
TURN = "t-prop"

TEXT = st.text(
    alphabet=st.one_of(st.characters(), st.sampled_from(['"', "\\", "\n", "\x00", "é", "語", "😀"])), max_size=400
)
# Mostly small chunks, sometimes large enough to be cut even under the real budget.
PCM = st.one_of(
    st.binary(max_size=600).map(lambda b: b[: len(b) - len(b) % 2]),
    st.integers(min_value=1, max_value=40_000).map(lambda n: bytes(i % 251 for i in range(2 * n))),
)


@dataclass
class Turn:
    events: list[AgentEvent]
    text: str
    pcm: bytes
    failed: bool


@st.composite
def agent_turns(draw: st.DrawFn) -> Turn:
    """A valid §3 turn: agent_start, interleaved text and audio, audio_stream_end, one terminal event."""
    events: list[AgentEvent] = [AgentStart(RID, mode="bidi", model="m")]
    text_seq = chunk_seq = 0
    audio_started = False
    texts: list[str] = []
    pcms: list[bytes] = []
    for item in draw(st.lists(st.one_of(TEXT, PCM), max_size=12)):
        if isinstance(item, str):
            events.append(TextDelta(RID, text_seq, item))
            texts.append(utf8_safe(item))
            text_seq += 1
        else:
            if not audio_started:
                events.append(AudioStreamStart(RID, voice="jf_alpha"))
                audio_started = True
            events.append(AudioChunk(RID, chunk_seq, b64encode(item)))
            pcms.append(item)
            chunk_seq += 1
    if audio_started:
        events.append(AudioStreamEnd(RID, total_chunks=chunk_seq, duration_s=1.0))
    failed = draw(st.booleans())
    events.append(AgentFailed(RID, code="tts_failed", message=draw(TEXT)) if failed else AgentEnd(RID))
    return Turn(events, "".join(texts), b"".join(pcms), failed)


def utf8_safe(text: str) -> str:
    """What a client receives for ``text``: UTF-8 cannot carry an unpaired surrogate, so it arrives as U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


BUDGETS = st.sampled_from([1024, 3000, limits.CLIENT_FRAME_BUDGET_BYTES])


def frame_all(turn: Turn, budget: int) -> list[str]:
    framer = TurnFramer(TURN, budget_bytes=budget)
    return [message for event in turn.events for message in framer.frame(event)]


@settings(max_examples=80, deadline=None)
@given(turn=agent_turns(), budget=BUDGETS)
def test_framed_turn_is_bounded_numbered_and_reassembles_exactly(turn: Turn, budget: int) -> None:
    messages = frame_all(turn, budget)
    assert all(utf8_size(m) <= budget for m in messages)
    parsed = [parse_server_message(m) for m in messages]
    assert [getattr(p, "seq", None) for p in parsed] == list(range(len(messages)))
    assert [isinstance(p, TurnMessage) and p.terminal for p in parsed] == [False] * (len(parsed) - 1) + [True]

    session = ClientSession(collect_audio=True)
    events = [e for m in messages for e in session.receive(m)]
    state = session.turn(TURN)
    assert state.text == turn.text
    assert state.pcm == turn.pcm
    assert state.samples == len(turn.pcm) // 2
    end = events[-1]
    assert isinstance(end, TurnEnded)
    assert (end.outcome, end.code) == (
        (TurnOutcome.FAILED, "tts_failed") if turn.failed else (TurnOutcome.COMPLETED, None)
    )
    assert not any(isinstance(e, GapDetected | DuplicateIgnored) for e in events)


DELIVERY = st.sampled_from(["deliver"] * 6 + ["drop", "twice", "reconnect"])


@settings(max_examples=80, deadline=None)
@given(turn=agent_turns(), budget=BUDGETS, data=st.data())
def test_drops_repeats_and_resumes_lose_and_repeat_nothing(turn: Turn, budget: int, data: st.DataObject) -> None:
    framer = TurnFramer(TURN, budget_bytes=budget)
    buffer = ResumeBuffer()
    session = ClientSession(collect_audio=True)
    session.send_message("prompt", turn_id=TURN)
    events: list[ClientEvent] = []

    def resume() -> None:
        (request,) = session.resume_all()
        resume_message = parse_client_message(request)
        assert isinstance(resume_message, Resume)
        for replayed in buffer.after(resume_message.after_seq):
            events.extend(session.receive(replayed))

    for event in turn.events:
        for seq, message in framer.frame_numbered(event):
            buffer.append(seq, message)
            action = data.draw(DELIVERY)
            if action == "reconnect":  # the connection dropped before this message; the client resumes
                resume()
            elif action != "drop":
                events.extend(session.receive(message))
                if action == "twice":
                    events.extend(session.receive(message))
            if any(isinstance(e, GapDetected) for e in events[-2:]) and data.draw(st.booleans()):
                resume()  # a client may resume on the live connection as soon as it sees a gap
    while session.unfinished_turns:
        resume()

    state = session.turn(TURN)
    assert state.text == turn.text
    assert state.pcm == turn.pcm
    applied = [e.seq for e in events if isinstance(e, TextReceived | AudioReceived)]
    assert len(applied) == len(set(applied))
    assert applied == sorted(applied)
    assert sum(isinstance(e, TurnEnded) for e in events) == 1
    assert state.last_seq == framer.last_seq


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
KEYS = st.sampled_from(["action", "type", "prompt", "turn_id", "after_seq", "seq", "text", "data", "code", "mode"])
VALUES = st.one_of(
    JSON_VALUES, st.sampled_from([*(a.value for a in ClientAction), *(t.value for t in AgentEventType), "t-1", -1, 0])
)
MESSAGE_LIKE = st.dictionaries(KEYS, VALUES, max_size=6)
FRAMES = st.one_of(
    st.binary(max_size=60),
    st.text(max_size=60),
    JSON_VALUES.map(json.dumps),
    MESSAGE_LIKE.map(json.dumps),
    MESSAGE_LIKE.map(lambda obj: json.dumps(obj).encode()),
)


@settings(max_examples=100, deadline=None)
@given(frame=FRAMES)
def test_parse_client_message_raises_only_protocol_errors(frame: str | bytes) -> None:
    try:
        message = parse_client_message(frame)
    except ProtocolError as exc:
        assert exc.code in {code.value for code in ClientErrorCode}
    else:
        assert parse_client_message(serialize(message)) == message


@settings(max_examples=100, deadline=None)
@given(frames=st.lists(FRAMES, max_size=8))
def test_client_session_survives_any_input_unchanged_by_bad_messages(frames: list[str | bytes]) -> None:
    session = ClientSession()
    session.send_message("Hi", turn_id="t-1")
    good = frame_all(Turn([AgentStart(RID), TextDelta(RID, 0, "ok"), AgentEnd(RID)], "ok", b"", False), 4096)
    for frame in frames:
        before = [(t.turn_id, t.phase, t.last_seq, t.text) for t in session.turns]
        try:
            session.receive(frame)
        except ProtocolError:
            assert [(t.turn_id, t.phase, t.last_seq, t.text) for t in session.turns] == before
    for message in good:
        try:
            session.receive(message)
        except ProtocolError:
            assert session.turn(TURN).finished  # only a turn the junk already ended may refuse more
    assert session.turn(TURN).finished
