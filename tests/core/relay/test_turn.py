"""The relay side of a turn without I/O: facts in, commands out, every answer given by the test. No moto, no
threads, no waiting: time is a number the test passes."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relay_core.agent.events import (
    AgentEnd,
    AgentEvent,
    AgentFailed,
    AgentStart,
    AudioChunk,
    TextDelta,
    TurnStatus,
    serialize_event,
)
from relay_core.audio import b64encode
from relay_core.errors import SessionStateError
from relay_core.relay.commands import (
    CancelAgent,
    CloseRecord,
    CloseStream,
    EndRecord,
    FreeConnection,
    Log,
    MarkDetached,
    Post,
    PostKind,
    PostOutcome,
    ReadRecord,
    RecordRead,
    RelayCommand,
    ReleaseConnection,
)
from relay_core.relay.phases import PHASE_TABLE, RelayInput, RelayPhase, phase_table_markdown
from relay_core.relay.resume_buffer import ResumeBuffer
from relay_core.relay.turn import RelayTurn
from relay_core.relay.turn_record import RelayOutcome
from relay_core.sse import encode_sse

DOCS = Path(__file__).resolve().parents[3] / "docs" / "functions.md"
TURN = "t-0001"
WINDOW_S = 30.0


def sse(*events: AgentEvent) -> bytes:
    return b"".join(encode_sse(serialize_event(e)) for e in events)


def machine(**kwargs: Any) -> RelayTurn:
    return RelayTurn(TURN, "conn-a", resume_window_s=WINDOW_S, started=0.0, text_window_s=0.0, **kwargs)


@dataclass
class Driver:
    """Executes the machine's commands as the test says: every post answered by :attr:`posts`, every read of the
    record by :attr:`record` (None: the record is gone), every close by :attr:`closes` (in turn; then True)."""

    relay: RelayTurn
    now: float = 0.0
    posts: Callable[[Post], PostOutcome] = lambda post: PostOutcome.DELIVERED
    record: RecordRead | None = field(default_factory=lambda: RecordRead("conn-a"))
    closes: list[bool] = field(default_factory=list)
    reads: list[RecordRead | None] = field(default_factory=list)
    """Reads answered first, in turn (then :attr:`record`)."""
    done: list[RelayCommand] = field(default_factory=list)
    """Every command executed, in order (log lines left out)."""

    def drain(self) -> list[RelayCommand]:
        """Run every command until the machine waits for an input; the commands run (without logs)."""
        start = len(self.done)
        while (command := self.relay.next_command()) is not None:
            if not isinstance(command, Log):
                self.done.append(command)
            if isinstance(command, Post):
                self.relay.post_done(self.posts(command), self.now)
            elif isinstance(command, FreeConnection):
                self.relay.connection_freed(self.now)
            elif isinstance(command, ReadRecord):
                self.relay.record_read(self.reads.pop(0) if self.reads else self.record, self.now)
            elif isinstance(command, CloseRecord):
                self.relay.record_closed(self.closes.pop(0) if self.closes else True, self.now)
        return self.done[start:]

    def feed(self, *events: AgentEvent) -> list[RelayCommand]:
        self.relay.agent_bytes(sse(*events), self.now)
        return self.drain()

    def posted(self, connection_id: str = "conn-a") -> list[dict[str, Any]]:
        return [json.loads(c.message) for c in self.done if isinstance(c, Post) and c.connection_id == connection_id]


def kinds(commands: list[RelayCommand]) -> list[str]:
    return [type(c).__name__ for c in commands]


def test_a_turn_is_posted_in_order_and_its_connection_freed_before_the_terminal() -> None:
    driver = Driver(machine())
    commands = driver.feed(AgentStart(TURN), TextDelta(TURN, 0, "Hello."), AgentEnd(TURN))
    assert kinds(commands) == [
        "Post", "Post", "FreeConnection", "Post", "CloseStream", "ReadRecord", "CloseRecord", "ReleaseConnection",
    ]  # fmt: skip
    assert commands[2] == FreeConnection("conn-a", RelayOutcome.COMPLETED, end_record=True)
    assert [m["seq"] for m in driver.posted()] == [0, 1, 2] and driver.posted()[-1]["type"] == "agent_end"
    assert commands[6] == CloseRecord(seen_resume_count=0, outcome=RelayOutcome.COMPLETED)
    assert driver.relay.done and driver.relay.result.messages == 3 and driver.relay.result.posted == 3


def test_the_terminal_is_not_handed_out_until_the_free_is_answered() -> None:
    relay = machine()
    relay.agent_bytes(sse(AgentStart(TURN), AgentEnd(TURN)), 0.0)
    assert isinstance(post := relay.next_command(), Post)
    relay.post_done(PostOutcome.DELIVERED, 0.0)
    assert isinstance(relay.next_command(), FreeConnection)
    with pytest.raises(SessionStateError, match=r"connection_freed\(\)"):
        relay.next_command()
    with pytest.raises(SessionStateError, match="post_done"):
        relay.post_done(PostOutcome.DELIVERED, 0.0)
    relay.connection_freed(0.0)
    terminal = relay.next_command()
    assert isinstance(terminal, Post) and terminal.terminal and terminal.seq == post.seq + 1  # type: ignore[operator]


def test_inputs_are_refused_until_the_machine_is_idle_and_in_a_phase_that_takes_them() -> None:
    relay = machine()
    relay.agent_bytes(sse(AgentStart(TURN)), 0.0)
    with pytest.raises(SessionStateError, match=r"next_command\(\)"):
        relay.tick(0.1)  # the post of agent_start is not even handed out yet
    assert isinstance(relay.next_command(), Post)
    with pytest.raises(SessionStateError, match=r"post_done\(\)"):
        relay.next_command()
    with pytest.raises(SessionStateError, match="pending"):
        relay.agent_closed(0.1)
    with pytest.raises(SessionStateError, match="record_closed"):
        relay.record_closed(True, 0.1)
    relay.post_done(PostOutcome.DELIVERED, 0.1)
    assert relay.next_command() is None
    relay.tick(0.2)  # idle again: accepted


def test_the_phase_table_names_every_input_of_the_phases_that_take_input() -> None:
    assert set(PHASE_TABLE[RelayPhase.STREAMING]) == set(RelayInput)
    assert set(PHASE_TABLE[RelayPhase.LINGERING]) == set(RelayInput) - {RelayInput.AGENT_UNREACHABLE}
    assert PHASE_TABLE[RelayPhase.CLOSING] == PHASE_TABLE[RelayPhase.DONE] == {}
    driver = Driver(machine())
    driver.feed(AgentStart(TURN), AgentEnd(TURN))
    with pytest.raises(SessionStateError, match="not accepted while done"):
        driver.relay.tick(1.0)


def test_docs_functions_md_carries_the_phase_table() -> None:
    text = DOCS.read_text(encoding="utf-8")
    documented = text.split("<!-- relay-phases:begin -->\n", 1)[1].split("\n<!-- relay-phases:end -->", 1)[0]
    assert documented == phase_table_markdown()


def test_a_cancel_flag_reaches_the_agent_once_with_played_ms_and_an_agent_that_ignores_it_is_ended() -> None:
    driver = Driver(machine(cancel_grace_s=5.0))
    driver.feed(AgentStart(TURN))
    flagged = RecordRead("conn-a", cancel_requested=True, played_ms=1200)
    driver.relay.record_read(flagged, 1.0)
    assert driver.drain() == [CancelAgent(1200)]
    driver.relay.record_read(flagged, 2.0)
    assert driver.drain() == []
    assert driver.relay.deadline == 6.0
    driver.now = 6.0
    driver.relay.tick(6.0)
    commands = driver.drain()
    assert kinds(commands)[:2] == ["FreeConnection", "Post"]
    assert driver.posted()[-1] == {
        "type": "agent_end", "turn_id": TURN, "seq": 1, "status": "cancelled", "text_chars": 0, "sentences": 0,
        "elapsed_s": 0.0,
    }  # fmt: skip
    assert driver.relay.result.outcome is RelayOutcome.CANCELLED and driver.relay.result.cancel_latency_s == 5.0


def test_a_gone_client_is_buffered_for_and_replayed_to_its_new_connection_terminal_freed_there_first() -> None:
    gone = {"conn-a"}
    driver = Driver(machine(), posts=lambda p: PostOutcome.GONE if p.connection_id in gone else PostOutcome.DELIVERED)
    driver.feed(AgentStart(TURN))
    assert driver.done[-1] == MarkDetached("conn-a") and driver.relay.detached_since == 0.0
    assert driver.feed(TextDelta(TURN, 0, "one "), AgentEnd(TURN)) == [CloseStream(), EndRecord(RelayOutcome.COMPLETED)]
    assert len(driver.relay.buffer) == 3
    driver.now = 4.0
    driver.relay.record_read(RecordRead("conn-b", resume_count=1, resume_after_seq=-1), 4.0)
    commands = driver.drain()
    assert [(type(c).__name__, getattr(c, "connection_id", None)) for c in commands[:5]] == [
        ("Post", "conn-b"), ("Post", "conn-b"), ("Post", "conn-b"), ("FreeConnection", "conn-b"), ("Post", "conn-b"),
    ]  # fmt: skip
    assert commands[3] == FreeConnection("conn-b", RelayOutcome.COMPLETED, end_record=False)  # ended before
    assert [m.get("seq") for m in driver.posted("conn-b")] == [None, 0, 1, 2]
    assert commands[-2:] == [ReleaseConnection("conn-b"), ReleaseConnection("conn-a")]
    assert driver.relay.result.replays == 1 and driver.relay.result.replayed_messages == 3


def test_a_client_away_longer_than_the_window_abandons_the_turn_without_ending_the_record() -> None:
    driver = Driver(machine(), posts=lambda p: PostOutcome.GONE)
    driver.feed(AgentStart(TURN))
    driver.now = WINDOW_S
    driver.relay.tick(WINDOW_S)
    commands = driver.drain()
    assert commands == [
        CancelAgent(None),
        CloseStream(),
        CloseRecord(seen_resume_count=0, outcome=RelayOutcome.ABANDONED),
        ReleaseConnection("conn-a"),
    ]
    assert driver.relay.result.outcome is RelayOutcome.ABANDONED


def test_a_lost_terminal_keeps_the_relay_lingering_until_the_same_connection_resumes() -> None:
    failed: set[int] = set()

    def posts(post: Post) -> PostOutcome:
        if post.terminal and not failed:
            failed.add(1)
            return PostOutcome.FAILED
        return PostOutcome.DELIVERED

    driver = Driver(machine(), posts=posts)
    driver.feed(AgentStart(TURN), AgentEnd(TURN))
    assert driver.relay.phase is RelayPhase.LINGERING and driver.relay.detached_since == 0.0
    driver.relay.record_read(RecordRead("conn-a", resume_count=1, resume_after_seq=0), 1.0)
    commands = driver.drain()
    assert kinds(commands)[:3] == ["Post", "FreeConnection", "Post"] and commands[2].terminal  # type: ignore[union-attr]
    assert [m.get("seq") for m in driver.posted()] == [0, 1, None, 1]
    assert driver.relay.done and driver.relay.result.failed_posts == 1


def test_a_resume_on_the_same_connection_repeats_nothing_already_posted_there() -> None:
    driver = Driver(machine())
    driver.feed(AgentStart(TURN), TextDelta(TURN, 0, "a"), TextDelta(TURN, 1, "b"))
    driver.relay.record_read(RecordRead("conn-a", resume_count=1, resume_after_seq=0), 1.0)
    assert [m.get("seq") for m in (json.loads(c.message) for c in driver.drain() if isinstance(c, Post))] == [None]


def test_a_resume_that_slips_in_during_the_close_is_served_then_closed() -> None:
    resumed = RecordRead("conn-b", resume_count=1, resume_after_seq=-1)  # what the close's retry reads
    driver = Driver(machine(), closes=[False], reads=[RecordRead("conn-a"), resumed])
    driver.feed(AgentStart(TURN))
    commands = driver.feed(AgentEnd(TURN))
    closes = [c for c in commands if isinstance(c, CloseRecord)]
    assert closes == [CloseRecord(0, RelayOutcome.COMPLETED), CloseRecord(1, RelayOutcome.COMPLETED)]
    assert [m.get("seq") for m in driver.posted("conn-b")] == [None, 0, 1]
    assert commands[-2:] == [ReleaseConnection("conn-b"), ReleaseConnection("conn-a")]


def test_a_resume_past_the_buffer_is_refused_and_the_turn_abandoned() -> None:
    driver = Driver(machine(buffer=ResumeBuffer(max_messages=2)))
    driver.feed(AgentStart(TURN), *(TextDelta(TURN, i, f"{i} ") for i in range(4)))
    driver.relay.record_read(RecordRead("conn-b", resume_count=1, resume_after_seq=0), 1.0)
    commands = driver.drain()
    assert isinstance(commands[0], Post) and commands[0].kind is PostKind.REJECTION
    assert json.loads(commands[0].message)["code"] == "resume_expired"
    assert commands[1:3] == [CancelAgent(None), CloseStream()]
    assert driver.relay.result.outcome is RelayOutcome.ABANDONED


def test_an_internal_failure_mid_post_cancels_and_ends_with_internal_error_and_a_second_one_closes() -> None:
    relay = machine()
    relay.agent_bytes(sse(AgentStart(TURN), TextDelta(TURN, 0, "x")), 0.0)
    assert isinstance(relay.next_command(), Post)
    relay.post_done(PostOutcome.DELIVERED, 0.0)
    assert isinstance(relay.next_command(), Post)  # seq 1: the driver blows up executing it
    relay.internal_failure(0.1)
    driver = Driver(relay)
    commands = driver.drain()
    assert commands[0] == CancelAgent(None) and kinds(commands)[1:3] == ["FreeConnection", "Post"]
    error = json.loads(commands[2].message)  # type: ignore[union-attr]
    assert (error["type"], error["seq"], error["code"]) == ("error", 2, "internal_error")
    assert "ReadRecord" not in kinds(commands) and relay.done  # no lingering after a failure

    again = machine()
    again.agent_unreachable(0.0)
    assert isinstance(again.next_command(), FreeConnection)
    again.internal_failure(0.0)
    assert isinstance(again.next_command(), FreeConnection)  # the first failure: the terminal still goes out
    again.internal_failure(0.0)
    assert kinds(Driver(again).drain()) == ["CloseStream", "CloseRecord", "ReleaseConnection"]
    closing = machine()
    closing.agent_unreachable(0.0)
    Driver(closing).drain()
    with pytest.raises(SessionStateError, match="while closing"):
        closing.internal_failure(0.0)


def test_an_unreachable_agent_ends_the_turn_with_agent_unavailable_at_seq_0() -> None:
    driver = Driver(machine())
    driver.relay.agent_unreachable(0.0)
    driver.drain()
    [error] = driver.posted()
    assert (error["type"], error["seq"], error["code"]) == ("error", 0, "agent_unavailable")
    assert driver.relay.result.outcome is RelayOutcome.FAILED


def test_a_stream_that_ends_without_a_terminal_and_agent_input_after_the_end() -> None:
    driver = Driver(machine(), record=None)
    driver.feed(AgentStart(TURN))
    driver.relay.agent_closed(0.0)
    driver.drain()
    assert [m["type"] for m in driver.posted()] == ["agent_start", "error"]
    lingering = Driver(machine(), record=RecordRead("conn-a", away_s=1.0))
    lingering.feed(AgentStart(TURN), AgentEnd(TURN))
    assert lingering.relay.phase is RelayPhase.LINGERING
    lingering.relay.agent_bytes(sse(TextDelta(TURN, 0, "late")), 1.0)  # ignored: the terminal is framed
    assert lingering.drain() == []


def test_an_audio_post_sets_the_time_to_first_audio() -> None:
    driver = Driver(machine(), now=0.25)
    driver.feed(AgentStart(TURN), AudioChunk(TURN, 0, b64encode(b"\x01\x00" * 10)), AgentEnd(TURN))
    assert driver.relay.result.time_to_first_audio_s == 0.25


# --- any order of facts ---------------------------------------------------------------------------------------

EVENTS: list[AgentEvent] = [
    AgentStart(TURN),
    TextDelta(TURN, 0, "word "),
    AudioChunk(TURN, 0, b64encode(b"\x02\x00" * 8)),
    AgentEnd(TURN),
    AgentEnd(TURN, status=TurnStatus.CANCELLED.value),
    AgentFailed(TURN, "tts_failed", "speech failed"),
]
INPUTS = st.one_of(
    st.tuples(st.just("bytes"), st.lists(st.sampled_from(range(len(EVENTS))), max_size=4)),
    st.tuples(st.just("garbage"), st.binary(max_size=30)),
    st.tuples(st.sampled_from(["closed", "failed", "unreachable", "internal"])),
    st.tuples(st.just("tick"), st.floats(0.0, 40.0)),
    st.tuples(
        st.just("read"),
        st.booleans(),  # cancel requested
        st.one_of(st.none(), st.integers(0, 5000)),  # played_ms
        st.integers(0, 2),  # resumes since the last read
        st.sampled_from(["conn-a", "conn-b"]),
        st.integers(-2, 12),  # after_seq
        st.one_of(st.none(), st.floats(0.0, 60.0)),  # away_s
    ),
    st.tuples(st.just("gone_record")),
)


def _feed(relay: RelayTurn, step: tuple[Any, ...], now: float, state: dict[str, int]) -> None:
    kind = step[0]
    if kind == "bytes":
        relay.agent_bytes(sse(*(EVENTS[i] for i in step[1])), now)
    elif kind == "garbage":
        relay.agent_bytes(step[1], now)
    elif kind == "closed":
        relay.agent_closed(now)
    elif kind == "failed":
        relay.agent_failed(now)
    elif kind == "unreachable":
        relay.agent_unreachable(now)
    elif kind == "internal":
        relay.internal_failure(now)
    elif kind == "tick":
        relay.tick(now)
    elif kind == "read":
        state["resumes"] += step[3]
        read = RecordRead(step[4], step[1], step[2], state["resumes"], step[5], step[6])
        relay.record_read(read, now)
    else:
        relay.record_read(None, now)


def _answer(relay: RelayTurn, command: RelayCommand, data: st.DataObject, now: float, state: dict[str, int]) -> None:
    if isinstance(command, Post):
        relay.post_done(data.draw(st.sampled_from(PostOutcome)), now)
    elif isinstance(command, FreeConnection):
        relay.connection_freed(now, record_ended=data.draw(st.booleans()))
    elif isinstance(command, ReadRecord):
        if data.draw(st.booleans()):
            relay.record_unreadable(now)
        else:
            state["resumes"] += data.draw(st.integers(0, 1))
            relay.record_read(RecordRead(data.draw(st.sampled_from(["conn-a", "conn-b"])),
                                         resume_count=state["resumes"], resume_after_seq=-1), now)  # fmt: skip
    elif isinstance(command, CloseRecord):
        relay.record_closed(data.draw(st.booleans()), now)


def _check_terminal_posts(commands: list[RelayCommand]) -> None:
    """Fault 1, as a property: each post of the terminal comes right after a free of the same connection, and the
    record was marked ended (a free that ended it, or an EndRecord) before the first one."""
    ended = False
    for index, command in enumerate(commands):
        if (isinstance(command, FreeConnection) and command.end_record) or isinstance(command, EndRecord):
            ended = True
        if isinstance(command, Post) and command.terminal:
            before = commands[index - 1]
            assert isinstance(before, FreeConnection) and before.connection_id == command.connection_id
            assert ended


@settings(max_examples=400, deadline=None)
@given(steps=st.lists(INPUTS, max_size=14), data=st.data())
def test_whatever_the_order_of_facts_the_turn_frees_before_its_terminal_and_ends(
    steps: list[tuple[Any, ...]], data: st.DataObject
) -> None:
    relay = RelayTurn(TURN, "conn-a", resume_window_s=5.0, started=0.0, cancel_grace_s=2.0,
                      text_window_s=0.1, buffer=ResumeBuffer(max_messages=6))  # fmt: skip
    commands: list[RelayCommand] = []
    state = {"resumes": 0}
    now = 0.0

    def run(command: RelayCommand) -> None:
        if not isinstance(command, Log):
            commands.append(command)
        if isinstance(command, Post) and command.kind is PostKind.MESSAGE:
            assert json.loads(command.message)["seq"] == command.seq
        _answer(relay, command, data, now, state)

    for step in steps:
        now += 0.05 if step[0] != "tick" else step[1]
        try:
            _feed(relay, step, now, state)
        except SessionStateError:
            pass  # refused (a phase that does not take it, or a failure while closing): nothing changed
        # sometimes the driver misbehaves before draining: the machine refuses, and carries on
        if data.draw(st.booleans()) and (command := relay.next_command()) is not None:
            with pytest.raises(SessionStateError):
                relay.tick(now)
            run(command)
        while (command := relay.next_command()) is not None:
            run(command)

    # the driver's loop to the end: the stream ends, time passes, the client never comes back
    for _ in range(60):
        if relay.done:
            break
        now += 3.0
        for fact in (relay.agent_closed, relay.tick):
            if relay.done:
                break
            try:
                fact(now)
            except SessionStateError:
                pass
            while (command := relay.next_command()) is not None:
                run(command)
    assert relay.done, f"the turn never closed: {relay.phase}"
    assert relay.next_command() is None
    _check_terminal_posts(commands)
    assert sum(isinstance(c, CloseRecord) for c in commands) <= 3
    assert isinstance(commands[-1], ReleaseConnection)
    assert sum(isinstance(c, CancelAgent) for c in commands) <= 1
    terminals = {c.seq for c in commands if isinstance(c, Post) and c.terminal}
    assert len(terminals) <= 1  # one terminal, however often it is replayed
