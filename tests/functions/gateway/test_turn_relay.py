"""The turn relay as a plain object: moto DynamoDB for the turn and connection records, a scripted agent stream,
and a recording stand-in for @connections. Cancel, disconnect and resume arrive the way they do in AWS: through
the route functions' writes to the turn record, while the relay runs on its own thread."""

from __future__ import annotations

import base64
import json
import threading
import time
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pytest
from botocore.exceptions import ClientError

from relay_core import limits
from relay_core.agent.events import (
    AgentEnd,
    AgentFailed,
    AgentPayload,
    AgentStart,
    AudioChunk,
    AudioStreamEnd,
    AudioStreamStart,
    TextDelta,
)
from relay_core.errors import ResumeExpiredError
from relay_core.relay.resume_buffer import ResumeBuffer
from relay_core.relay.turn_record import RelayOutcome, TurnState
from relay_core.word_timings import WordTiming, WordTimings
from relay_functions.gateway.agent_runtime import AgentUnavailableError
from relay_functions.gateway.deps import GatewayDeps
from relay_functions.gateway.posting import PostFailedError
from relay_functions.gateway.relay_request import RelayRequest
from relay_functions.gateway.turn_relay import RelayResult, TurnRelay

TURN = "t-relay-0001"
USER = "user-1"
SESSION = "kokoro-relay-conversation-" + "ab" * 16
POLL_S = 0.02
WINDOW_S = 30.0
"""The resume window of a relay whose client is meant to come back, and of its resumes: long, so that only a hang
runs it out however slow the machine is between the client's loss and its resume (a window meant to pass is 0.3 s)."""


def pcm(samples: int, start: int = 0) -> bytes:
    return b"".join(((start + i) % 30000).to_bytes(2, "little", signed=True) for i in range(samples))


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@dataclass
class Running:
    relay: TurnRelay
    thread: threading.Thread
    outcome: list[RelayResult]

    def join(self) -> RelayResult:
        self.thread.join(timeout=15)
        assert not self.thread.is_alive(), "the relay did not finish"
        return self.outcome[0]


def start_relay(deps: GatewayDeps, agent: Any, poster: Any, *, window_s: float = WINDOW_S, **kwargs: Any) -> Running:
    deps.connections.put("conn-a", user_id=USER, session_id=SESSION)
    assert deps.connections.claim_turn("conn-a", TURN)
    deps.turns.create(TURN, user_id=USER, session_id=SESSION, connection_id="conn-a")
    request = RelayRequest(
        turn_id=TURN,
        connection_id="conn-a",
        user_id=USER,
        session_id=SESSION,
        connections_endpoint="https://example.execute-api.us-east-1.amazonaws.com/production",
        agent=AgentPayload(prompt="hello", request_id=TURN),
    )
    relay = TurnRelay(
        request,
        turns=deps.turns,
        connections=deps.connections,
        poster=poster,
        agent=agent,
        resume_window_s=window_s,
        # one message per agent event unless a test asks for the text coalescing window
        **{"poll_interval_s": POLL_S, "text_window_s": 0.0, **kwargs},
    )
    outcome: list[RelayResult] = []
    thread = threading.Thread(target=lambda: outcome.append(relay.run()), daemon=True)
    thread.start()
    return Running(relay, thread, outcome)


def seqs(messages: list[dict[str, Any]]) -> list[int]:
    return [m["seq"] for m in messages if "seq" in m]


def test_a_turn_is_relayed_numbered_and_within_the_frame_quota(deps: GatewayDeps, gw: ModuleType) -> None:
    audio = pcm(48_000)  # 2 s: far over one frame once base64'd
    events = [
        AgentStart(TURN),
        TextDelta(TURN, 0, "Hello, "),
        AudioStreamStart(TURN, voice="jf_alpha"),
        TextDelta(TURN, 1, "sea — 海."),
        AudioChunk(TURN, 0, b64(audio)),
        AudioStreamEnd(TURN, total_chunks=1, duration_s=2.0),
        AgentEnd(TURN),
    ]

    def script(stream: Any, payload: AgentPayload) -> None:
        # transport chunks that split events and UTF-8 characters
        stream.push(gw.sse(*events[:4]), split=7)
        stream.push(gw.sse(*events[4:]), split=1500)
        stream.end()

    agent, poster = gw.FakeAgent(on_open=script), gw.RecordingPoster()
    result = start_relay(deps, agent, poster).join()

    raw = poster.sent["conn-a"]
    assert all(len(m.encode("utf-8")) <= limits.APIGW_FRAME_BYTES for m in raw)
    messages = [json.loads(m) for m in raw]
    assert seqs(messages) == list(range(len(messages)))
    assert {m["turn_id"] for m in messages} == {TURN}
    assert [m["type"] for m in messages][:4] == ["agent_start", "text_delta", "audio_stream_start", "text_delta"]
    assert messages[-1]["type"] == "agent_end" and messages[-1]["status"] == "completed"
    assert "".join(m["text"] for m in messages if m["type"] == "text_delta") == "Hello, sea — 海."
    pieces = [m for m in messages if m["type"] == "audio_chunk"]
    assert len(pieces) > 1
    assert b"".join(base64.b64decode(m["data"]) for m in pieces) == audio
    assert agent.sessions == [SESSION] and agent.payloads[0].request_id == TURN
    assert result.outcome == RelayOutcome.COMPLETED and result.messages == len(messages)
    assert result.time_to_first_audio_s is not None
    turn = deps.turns.get(TURN)
    assert turn is not None and turn.state == TurnState.CLOSED and turn.outcome == "completed"
    connection = deps.connections.get("conn-a")
    assert connection is not None and connection.active_turn is None  # the next sendMessage may run


def test_a_token_by_token_reply_goes_out_as_a_few_text_messages_before_its_audio(
    deps: GatewayDeps, gw: ModuleType
) -> None:
    words = [f"word{i} " for i in range(30)]
    audio = pcm(2400)

    def script(stream: Any, payload: AgentPayload) -> None:
        stream.push(gw.sse(AgentStart(TURN)))
        for i, word in enumerate(words):  # an LLM's deltas, 5 ms apart
            stream.push(gw.sse(TextDelta(TURN, i, word)))
            time.sleep(0.005)
        stream.push(gw.sse(AudioStreamStart(TURN, voice="af_heart"), AudioChunk(TURN, 0, b64(audio))))
        stream.push(gw.sse(TextDelta(TURN, 30, "last."), AudioStreamEnd(TURN, total_chunks=1, duration_s=0.1)))
        stream.push(gw.sse(AgentEnd(TURN)))
        stream.end()

    agent, poster = gw.FakeAgent(on_open=script), gw.RecordingPoster()
    started = time.monotonic()
    result = start_relay(deps, agent, poster, text_window_s=0.1).join()
    relayed_within_s = time.monotonic() - started

    messages = poster.messages("conn-a")
    kinds = [m["type"] for m in messages]
    text_messages = [m for m in messages if m["type"] == "text_delta"]
    assert "".join(m["text"] for m in text_messages) == "".join(words) + "last."
    # 31 deltas over ~0.2 s: the first at once, then at most one per 100 ms while the relay ran (however slow the
    # machine made it), then what the audio and the end forced out; one message per delta would be 31
    assert 2 <= len(text_messages) <= 3 + int(relayed_within_s / 0.1)
    assert text_messages[0]["text"] == "word0 "
    # every word the agent wrote before its audio reaches the client before that audio (held text goes first)
    before_audio = messages[: kinds.index("audio_stream_start")]
    assert "".join(m.get("text", "") for m in before_audio) == "".join(words)
    assert seqs(messages) == list(range(len(messages)))
    assert result.outcome == RelayOutcome.COMPLETED


def test_cancel_reaches_the_agent_and_the_client_gets_agent_end_cancelled(deps: GatewayDeps, gw: ModuleType) -> None:
    def script(stream: Any, payload: AgentPayload) -> None:
        stream.push(gw.sse(AgentStart(TURN), TextDelta(TURN, 0, "A long answer")))  # ... and the agent goes on

    agent, poster = gw.FakeAgent(on_open=script), gw.RecordingPoster()
    running = start_relay(deps, agent, poster)
    poster.wait_for(lambda: len(poster.sent.get("conn-a", [])) == 2)
    assert deps.turns.request_cancel(TURN, user_id=USER)  # what the cancel route writes
    result = running.join()

    assert agent.cancels == [(SESSION, TURN)]
    messages = poster.messages("conn-a")
    assert messages[-1]["type"] == "agent_end" and messages[-1]["status"] == "cancelled"
    assert seqs(messages) == [0, 1, 2]
    assert result.outcome == RelayOutcome.CANCELLED
    assert result.cancel_latency_s is not None
    turn = deps.turns.get(TURN)
    assert turn is not None and turn.outcome == "cancelled"


def test_an_agent_that_ignores_the_cancel_is_ended_by_the_relay(deps: GatewayDeps, gw: ModuleType) -> None:
    agent = gw.FakeAgent(on_open=lambda s, p: s.push(gw.sse(AgentStart(TURN))), honour_cancel=False)
    poster = gw.RecordingPoster()
    running = start_relay(deps, agent, poster, cancel_grace_s=0.2)
    poster.wait_for(lambda: bool(poster.sent.get("conn-a")))
    deps.turns.request_cancel(TURN, user_id=USER)
    result = running.join()
    assert poster.messages("conn-a")[-1] == {
        "turn_id": TURN,
        "seq": 1,
        "status": "cancelled",
        "text_chars": 0,
        "sentences": 0,
        "elapsed_s": 0.0,
        "type": "agent_end",
    }
    assert agent.streams[0].closed.is_set()
    assert result.outcome == RelayOutcome.CANCELLED


@pytest.mark.parametrize("dropped_by", ["gone_exception", "disconnect_route"])
def test_a_client_that_comes_back_gets_everything_once(deps: GatewayDeps, gw: ModuleType, dropped_by: str) -> None:
    agent, poster = gw.FakeAgent(), gw.RecordingPoster()
    running = start_relay(deps, agent, poster)
    assert agent.opened.wait(5)
    stream = agent.streams[0]
    stream.push(gw.sse(AgentStart(TURN), TextDelta(TURN, 0, "one ")))
    poster.wait_for(lambda: len(poster.sent.get("conn-a", [])) == 2)

    # the mobile network drops
    poster.gone.add("conn-a")
    if dropped_by == "disconnect_route":
        deps.turns.mark_detached(TURN, connection_id="conn-a")
        gw.wait_until(lambda: running.relay.detached_since is not None)
    stream.push(gw.sse(TextDelta(TURN, 1, "two "), TextDelta(TURN, 2, "three ")))
    gw.wait_until(lambda: running.relay.buffer.last_seq == 3)
    assert running.relay.detached_since is not None

    # it reconnects and resumes from the last seq it holds (what the resume route writes)
    held = seqs(poster.messages("conn-a"))[-1]
    deps.connections.put("conn-b", user_id=USER, session_id=SESSION)
    assert deps.connections.claim_turn("conn-b", TURN)
    deps.turns.resume(TURN, user_id=USER, connection_id="conn-b", after_seq=held, window_s=WINDOW_S)
    poster.wait_for(lambda: len(poster.sent.get("conn-b", [])) == 3)  # turn_accepted + the two it missed
    stream.push(gw.sse(TextDelta(TURN, 3, "four."), AgentEnd(TURN)))
    stream.end()
    result = running.join()

    before, after = poster.messages("conn-a"), poster.messages("conn-b")
    assert after[0] == {"type": "turn_accepted", "turn_id": TURN}
    assert seqs(before) + seqs(after) == list(range(6))  # nothing lost, nothing repeated
    assert "".join(m.get("text", "") for m in before + after) == "one two three four."
    assert result.replays == 1 and result.replayed_messages == 2
    assert result.outcome == RelayOutcome.COMPLETED and agent.cancels == []
    connection_b = deps.connections.get("conn-b")
    assert connection_b is not None and connection_b.active_turn is None


def test_a_client_gone_for_good_stops_the_agent_turn(deps: GatewayDeps, gw: ModuleType) -> None:
    agent, poster = gw.FakeAgent(), gw.RecordingPoster()
    running = start_relay(deps, agent, poster, window_s=0.3)
    assert agent.opened.wait(5)
    stream = agent.streams[0]
    stream.push(gw.sse(AgentStart(TURN)))
    poster.wait_for(lambda: bool(poster.sent.get("conn-a")))
    poster.gone.add("conn-a")
    stream.push(gw.sse(TextDelta(TURN, 0, "anyone there?")))  # the agent goes on; nobody listens
    result = running.join()

    assert agent.cancels == [(SESSION, TURN)]  # so the agent stops, and with it the TTS work
    assert stream.closed.is_set()
    assert result.outcome == RelayOutcome.ABANDONED
    turn = deps.turns.get(TURN)
    assert turn is not None and turn.state == TurnState.CLOSED and turn.outcome == "abandoned"
    with pytest.raises(ResumeExpiredError):
        deps.turns.resume(TURN, user_id=USER, connection_id="conn-c", after_seq=0, window_s=30)


def test_a_turn_that_ended_while_the_client_was_away_is_still_resumable(deps: GatewayDeps, gw: ModuleType) -> None:
    agent, poster = gw.FakeAgent(), gw.RecordingPoster()
    running = start_relay(deps, agent, poster)
    assert agent.opened.wait(5)
    poster.gone.add("conn-a")
    agent.streams[0].push(gw.sse(AgentStart(TURN), TextDelta(TURN, 0, "done."), AgentEnd(TURN)))
    agent.streams[0].end()
    gw.wait_until(lambda: (t := deps.turns.get(TURN)) is not None and t.state == TurnState.ENDED)

    deps.connections.put("conn-b", user_id=USER, session_id=SESSION)
    deps.turns.resume(TURN, user_id=USER, connection_id="conn-b", after_seq=-1, window_s=WINDOW_S)
    result = running.join()
    assert seqs(poster.messages("conn-b")) == [0, 1, 2]
    assert result.outcome == RelayOutcome.COMPLETED and result.replays == 1


def test_a_resume_past_the_buffer_is_refused_and_the_turn_stopped(deps: GatewayDeps, gw: ModuleType) -> None:
    agent, poster = gw.FakeAgent(), gw.RecordingPoster()
    running = start_relay(deps, agent, poster, buffer=ResumeBuffer(max_messages=2))
    assert agent.opened.wait(5)
    stream = agent.streams[0]
    stream.push(gw.sse(AgentStart(TURN), *(TextDelta(TURN, i, f"{i} ") for i in range(4))))
    poster.wait_for(lambda: len(poster.sent.get("conn-a", [])) == 5)
    deps.connections.put("conn-b", user_id=USER, session_id=SESSION)
    deps.turns.resume(TURN, user_id=USER, connection_id="conn-b", after_seq=0, window_s=WINDOW_S)  # 1 and 2 are evicted
    result = running.join()
    assert poster.messages("conn-b") == [
        {
            "type": "error",
            "code": "resume_expired",
            "message": poster.messages("conn-b")[0]["message"],
            "turn_id": TURN,
        }
    ]
    assert agent.cancels == [(SESSION, TURN)]
    assert result.outcome in {RelayOutcome.ABANDONED, RelayOutcome.CANCELLED}


def test_an_unreachable_agent_ends_the_turn_with_agent_unavailable(deps: GatewayDeps, gw: ModuleType) -> None:
    class DownAgent:
        def open_turn(self, *, session_id: str, payload: AgentPayload) -> Any:
            raise AgentUnavailableError("invoke_agent_runtime failed: ThrottlingException")

        def cancel(self, *, session_id: str, request_id: str, played_ms: int | None = None) -> list[str]:
            raise AssertionError("nothing to cancel")

    poster = gw.RecordingPoster()
    result = start_relay(deps, DownAgent(), poster).join()
    [message] = poster.messages("conn-a")
    assert message["type"] == "error" and message["code"] == "agent_unavailable" and message["seq"] == 0
    assert "Throttling" not in message["message"]  # no internals to the client
    assert result.outcome == RelayOutcome.FAILED


def test_a_stream_that_breaks_off_ends_the_turn_cleanly(deps: GatewayDeps, gw: ModuleType) -> None:
    def script(stream: Any, payload: AgentPayload) -> None:
        stream.push(gw.sse(AgentStart(TURN)) + b'data: {"type":"text_delta","request_id":"t-relay-0001","se')
        stream.end()

    poster = gw.RecordingPoster()
    result = start_relay(deps, gw.FakeAgent(on_open=script), poster).join()
    messages = poster.messages("conn-a")
    assert [m["type"] for m in messages] == ["agent_start", "error"]
    assert messages[-1]["seq"] == 1 and messages[-1]["code"] == "agent_unavailable"
    assert result.outcome == RelayOutcome.FAILED


def test_bad_agent_events_are_skipped_and_an_agent_error_is_terminal(deps: GatewayDeps, gw: ModuleType) -> None:
    def script(stream: Any, payload: AgentPayload) -> None:
        stream.push(gw.sse(AgentStart(TURN)) + b'data: {"type":"mystery"}\n\ndata: not json\n\n')
        stream.push(gw.sse(AgentFailed(TURN, "tts_unavailable", "speech is unavailable right now")))
        stream.end()

    poster = gw.RecordingPoster()
    result = start_relay(deps, gw.FakeAgent(on_open=script), poster).join()
    messages = poster.messages("conn-a")
    assert [(m["type"], m["seq"]) for m in messages] == [("agent_start", 0), ("error", 1)]
    assert messages[1]["code"] == "tts_unavailable"
    assert result.outcome == RelayOutcome.FAILED


def test_a_post_that_keeps_failing_is_skipped_and_stays_resumable(deps: GatewayDeps, gw: ModuleType) -> None:
    class ThrottledOnce(gw.RecordingPoster):  # type: ignore[misc, name-defined]
        def post(self, connection_id: str, message: str) -> bool:
            if '"seq":1' in message and not getattr(self, "failed", False):
                self.failed = True
                raise PostFailedError("post_to_connection still failing after 6 attempts: LimitExceededException")
            return bool(super().post(connection_id, message))

    poster = ThrottledOnce()
    agent = gw.FakeAgent()
    running = start_relay(deps, agent, poster)
    assert agent.opened.wait(5)
    stream = agent.streams[0]
    stream.push(gw.sse(AgentStart(TURN), TextDelta(TURN, 0, "a"), TextDelta(TURN, 1, "b")))
    poster.wait_for(lambda: len(poster.sent.get("conn-a", [])) == 2)
    assert seqs(poster.messages("conn-a")) == [0, 2]  # the client sees the gap ...
    deps.turns.resume(TURN, user_id=USER, connection_id="conn-a", after_seq=0, window_s=WINDOW_S)  # ... and fills it
    poster.wait_for(lambda: len(poster.sent["conn-a"]) == 5)
    stream.push(gw.sse(AgentEnd(TURN)))
    stream.end()
    result = running.join()
    assert seqs(poster.messages("conn-a")) == [0, 2, 1, 2, 3]
    assert result.failed_posts == 1


def test_a_lost_last_message_keeps_the_relay_waiting_for_the_silent_clients_resume(
    deps: GatewayDeps, gw: ModuleType
) -> None:
    """The terminal message's post fails for good: no later message shows the client a gap, so the relay must
    not exit (its buffer would be lost) but wait for the resume the client sends after a silence."""

    class LosesTheEnd(gw.RecordingPoster):  # type: ignore[misc, name-defined]
        def post(self, connection_id: str, message: str) -> bool:
            if '"agent_end"' in message and not getattr(self, "failed", False):
                self.failed = True
                raise PostFailedError("post_to_connection unreachable: EndpointConnectionError")
            return bool(super().post(connection_id, message))

    poster = LosesTheEnd()
    agent = gw.FakeAgent()
    running = start_relay(deps, agent, poster)
    assert agent.opened.wait(5)
    agent.streams[0].push(gw.sse(AgentStart(TURN), TextDelta(TURN, 0, "a"), AgentEnd(TURN)))
    agent.streams[0].end()
    gw.wait_until(lambda: (t := deps.turns.get(TURN)) is not None and t.state == TurnState.ENDED)
    assert running.thread.is_alive()
    deps.turns.resume(TURN, user_id=USER, connection_id="conn-a", after_seq=1, window_s=WINDOW_S)
    result = running.join()
    assert seqs(poster.messages("conn-a")) == [0, 1, 2]
    assert poster.messages("conn-a")[-1]["type"] == "agent_end"
    assert result.outcome == RelayOutcome.COMPLETED and result.replays == 1


def test_a_repeated_invocation_does_not_run_the_turn_again(deps: GatewayDeps, gw: ModuleType) -> None:
    def script(stream: Any, payload: AgentPayload) -> None:
        stream.push(gw.sse(AgentStart(TURN), AgentEnd(TURN)))
        stream.end()

    agent, poster = gw.FakeAgent(on_open=script), gw.RecordingPoster()
    first = start_relay(deps, agent, poster)
    assert first.join().outcome == RelayOutcome.COMPLETED
    again = TurnRelay(
        first.relay.request,
        turns=deps.turns,
        connections=deps.connections,
        poster=poster,
        agent=agent,
        resume_window_s=WINDOW_S,
    )
    assert again.run().outcome == RelayOutcome.DUPLICATE
    assert len(agent.streams) == 1 and len(poster.sent["conn-a"]) == 2


def test_a_relay_failure_ends_the_turn_with_internal_error_and_cancels_the_agent(
    deps: GatewayDeps, gw: ModuleType
) -> None:
    class BrokenPoster(gw.RecordingPoster):  # type: ignore[misc, name-defined]
        def post(self, connection_id: str, message: str) -> bool:
            if '"seq":1' in message:
                raise RuntimeError("a bug in the relay's surroundings")
            return bool(super().post(connection_id, message))

    agent, poster = gw.FakeAgent(), BrokenPoster()
    running = start_relay(deps, agent, poster)
    assert agent.opened.wait(5)
    agent.streams[0].push(gw.sse(AgentStart(TURN), TextDelta(TURN, 0, "x")))
    result = running.join()
    messages = poster.messages("conn-a")
    assert [(m["type"], m["seq"]) for m in messages] == [("agent_start", 0), ("error", 2)]
    assert messages[-1]["code"] == "internal_error" and "RuntimeError" not in messages[-1]["message"]
    assert agent.cancels == [(SESSION, TURN)]
    assert result.outcome == RelayOutcome.FAILED
    turn = deps.turns.get(TURN)
    assert turn is not None and turn.state == TurnState.CLOSED


def test_a_resume_on_the_same_connection_does_not_repeat_what_was_already_posted_there(
    deps: GatewayDeps, gw: ModuleType
) -> None:
    """A client that heard nothing for a while resumes after seq 0 while 1 and 2 are already on their way to it
    over the same socket: only turn_accepted comes back, nothing is posted twice."""
    agent, poster = gw.FakeAgent(), gw.RecordingPoster()
    running = start_relay(deps, agent, poster)
    assert agent.opened.wait(5)
    stream = agent.streams[0]
    stream.push(gw.sse(AgentStart(TURN), TextDelta(TURN, 0, "a"), TextDelta(TURN, 1, "b")))
    poster.wait_for(lambda: len(poster.sent.get("conn-a", [])) == 3)
    deps.turns.resume(TURN, user_id=USER, connection_id="conn-a", after_seq=0, window_s=WINDOW_S)
    poster.wait_for(lambda: len(poster.sent["conn-a"]) == 4)
    stream.push(gw.sse(AgentEnd(TURN)))
    stream.end()
    result = running.join()
    assert [m["type"] for m in poster.messages("conn-a")][3] == "turn_accepted"
    assert seqs(poster.messages("conn-a")) == [0, 1, 2, 3]
    assert result.replays == 1 and result.replayed_messages == 0


def test_a_slow_read_of_the_turn_record_never_holds_up_posting(
    deps: GatewayDeps, gw: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_get = deps.turns.get
    stuck, release = threading.Event(), threading.Event()

    def slow_get(turn_id: str) -> Any:
        stuck.set()
        assert release.wait(15)
        return real_get(turn_id)

    agent, poster = gw.FakeAgent(), gw.RecordingPoster()
    running = start_relay(deps, agent, poster)
    monkeypatch.setattr(deps.turns, "get", slow_get)
    assert agent.opened.wait(5)
    assert stuck.wait(5)  # a read is under way and does not return ...
    agent.streams[0].push(gw.sse(AgentStart(TURN), TextDelta(TURN, 0, "a"), TextDelta(TURN, 1, "b")))
    poster.wait_for(lambda: len(poster.sent.get("conn-a", [])) == 3)  # ... yet every message is posted
    release.set()
    agent.streams[0].push(gw.sse(AgentEnd(TURN)))
    agent.streams[0].end()
    assert running.join().outcome == RelayOutcome.COMPLETED
    assert seqs(poster.messages("conn-a")) == [0, 1, 2, 3]


def test_a_failed_poll_is_retried_at_the_next_one(
    deps: GatewayDeps, gw: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:

    real_get = deps.turns.get
    failures = {"left": 3}

    def flaky_get(turn_id: str) -> Any:
        if failures["left"]:
            failures["left"] -= 1
            raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException"}}, "GetItem")
        return real_get(turn_id)

    agent, poster = gw.FakeAgent(), gw.RecordingPoster()
    running = start_relay(deps, agent, poster)
    assert agent.opened.wait(5)
    monkeypatch.setattr(deps.turns, "get", flaky_get)
    deps.turns.request_cancel(TURN, user_id=USER)
    result = running.join()
    assert failures["left"] == 0 and agent.cancels == [(SESSION, TURN)]
    assert result.outcome == RelayOutcome.CANCELLED


def test_word_timings_are_relayed_numbered_before_their_audio(deps: GatewayDeps, gw: ModuleType) -> None:
    words = WordTimings(TURN, (WordTiming("Hello,", 0.0, 0.3), WordTiming("sea.", 0.35, 0.6)))
    events = [
        AgentStart(TURN),
        TextDelta(TURN, 0, "Hello, sea."),
        AudioStreamStart(TURN, voice="jf_alpha"),
        words,
        AudioChunk(TURN, 0, b64(pcm(24_000))),
        AudioStreamEnd(TURN, total_chunks=1, duration_s=1.0),
        AgentEnd(TURN),
    ]
    agent = gw.FakeAgent(on_open=lambda stream, payload: (stream.push(gw.sse(*events)), stream.end()))
    poster = gw.RecordingPoster()
    start_relay(deps, agent, poster).join()
    messages = poster.messages("conn-a")
    assert seqs(messages) == list(range(len(messages)))
    kinds = [m["type"] for m in messages]
    assert kinds.index("word_timings") < kinds.index("audio_chunk")
    [timed] = [m for m in messages if m["type"] == "word_timings"]
    assert timed["words"] == [w.to_json() for w in words.words]


def test_a_cancel_with_played_ms_reaches_the_agent_with_it(deps: GatewayDeps, gw: ModuleType) -> None:
    agent = gw.FakeAgent(on_open=lambda stream, payload: stream.push(gw.sse(AgentStart(TURN))))
    poster = gw.RecordingPoster()
    running = start_relay(deps, agent, poster)
    poster.wait_for(lambda: bool(poster.sent.get("conn-a")))
    assert deps.turns.request_cancel(TURN, user_id=USER, played_ms=2350)  # what the cancel route writes
    result = running.join()
    assert agent.cancels == [(SESSION, TURN)] and agent.played_ms == [2350]
    assert result.outcome == RelayOutcome.CANCELLED


def test_a_cancel_with_played_ms_flagged_as_the_stream_ends_still_reaches_the_agent(
    deps: GatewayDeps, gw: ModuleType
) -> None:
    """The cancel route flagged the turn while it was running, but the relay reads the flag only after the
    terminal event (a poll interval longer than the turn): the agent still hears what was played."""

    def script(stream: Any, payload: AgentPayload) -> None:
        assert deps.turns.request_cancel(TURN, user_id=USER, played_ms=1500)
        stream.push(gw.sse(AgentStart(TURN), TextDelta(TURN, 0, "Short."), AgentEnd(TURN)))
        stream.end()

    agent = gw.FakeAgent(on_open=script, honour_cancel=False)
    result = start_relay(deps, agent, gw.RecordingPoster(), poll_interval_s=30.0).join()
    assert agent.cancels == [(SESSION, TURN)] and agent.played_ms == [1500]
    assert result.outcome == RelayOutcome.COMPLETED
