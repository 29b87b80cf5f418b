"""Captions and the truthful barge-in through the whole local relay (tests/conftest.py ``relay_stack``: the REAL
gateway functions, the real agent app with the speak model, the real Kokoro model), as a mobile client sees them,
and ``relay chat --timings`` in-process against the same stack."""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest

from relay_cli import chat_cli
from relay_cli.cli import main as relay_main
from relay_cli.gateway_client import TurnReport, open_connection, run_turn
from relay_core import limits
from relay_core.client.messages import Cancel, serialize
from relay_core.client.session import ClientTurn, TextReceived, TurnOutcome, WordsReceived
from relay_core.word_timings import INTERRUPTED_MARK, WordTiming, WordTimings
from voice_agent.app import VoiceAgentService

SHORT = "Hello there. Two sentences, timed."
LONG = (
    "This reply is long, so the listener can interrupt it. Every sentence goes to speech at once. "
    "The relay numbers each message of the turn. And this last sentence is one that nobody should hear."
)
HEARD = 3
"""The barge-in comes after the listener heard this many words of LONG."""


def _session_id(stack: Any, turn_id: str) -> str:
    """The AgentCore session (conversation) the gateway ran the turn on, from the turns table."""
    db = boto3.client("dynamodb", endpoint_url=stack.dynamodb_url, region_name=stack.env["AWS_REGION"])
    item = db.get_item(TableName=stack.env["TURNS_TABLE"], Key={"pk": {"S": turn_id}}, ConsistentRead=True)
    return str(item["Item"]["session_id"]["S"])


def _last_reply(session_id: str) -> str | None:
    """The last assistant message of the conversation, as the in-process agent app keeps it (None: not found)."""
    for service in (o for o in gc.get_objects() if type(o) is VoiceAgentService):  # no isinstance: dead proxies
        if service.conversations.ended_latest(session_id=session_id) is None:
            continue
        message = service.conversations.get(session_id).agent.messages[-1]
        if message["role"] == "assistant":
            return "".join(str(block["text"]) for block in message["content"] if "text" in block)
    return None


def _wait_for_reply(session_id: str, expected: str) -> None:
    deadline = time.monotonic() + 10
    while (reply := _last_reply(session_id)) != expected:
        assert time.monotonic() < deadline, f"the agent remembers {reply!r}, not {expected!r}"
        time.sleep(0.05)


async def _send(url: str, token: str, message: Cancel, *, until: Callable[[], None]) -> None:
    """One client message on a connection of its own, kept open until ``until`` returns (the gateway answers a
    successful cancel with nothing, and handles a message and the close that follows it in no set order: closed at
    once, the connection can be forgotten before its cancel is read)."""
    websocket = await open_connection(url, token)
    try:
        await websocket.send(serialize(message))
        await asyncio.to_thread(until)
    finally:
        await websocket.close()


def test_captions_cover_the_reply_and_a_barge_in_with_played_ms_cuts_the_agents_memory(relay_stack: Any) -> None:
    url, token = relay_stack.gateway_url, relay_stack.dev_token("captions-user")
    report = asyncio.run(run_turn(url, token, SHORT, timings=True))
    assert report.outcome is TurnOutcome.COMPLETED
    assert [w.word for w in report.words] == report.text.split(), "every written word, in order"
    assert all(w.final for w in report.words), "every estimate was replaced by its final timing"
    WordTimings("check", tuple(report.words))  # never going back in time, across segments
    audio_s = len(report.pcm) / limits.SAMPLE_WIDTH_BYTES / limits.SAMPLE_RATE
    assert all(0 <= w.start_s <= w.end_s <= audio_s + 0.001 for w in report.words), (audio_s, report.words[-1])
    session_id = _session_id(relay_stack, report.turn_id)

    # The turn is over but its audio plays on: Stop after one word still tells the agent what was heard.
    first, second = report.words[0], report.words[1]
    played_ms = round(500 * (first.midpoint_s + second.midpoint_s))  # past the first word's midpoint only
    heard = f"{first.word}… {INTERRUPTED_MARK}"
    asyncio.run(
        _send(url, token, Cancel(report.turn_id, played_ms=played_ms), until=lambda: _wait_for_reply(session_id, heard))
    )

    def barge_in(turn: ClientTurn) -> int | None:
        if len(turn.words) <= HEARD:
            return None
        before, after = turn.words[HEARD - 1], turn.words[HEARD]
        return round(500 * (before.midpoint_s + after.midpoint_s))  # past word HEARD-1's midpoint, before HEARD's

    cut = asyncio.run(run_turn(url, token, LONG, timings=True, barge_in=barge_in))
    assert cut.outcome is TurnOutcome.CANCELLED and cut.cancel_played_ms is not None
    assert _session_id(relay_stack, cut.turn_id) == session_id, "one conversation per user"
    _wait_for_reply(session_id, " ".join(LONG.split()[:HEARD]) + f"… {INTERRUPTED_MARK}")


def test_relay_chat_timings_prints_each_word_with_its_time(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CLI's side only (the gateway client is exercised above): the flag reaches the turn, every word is
    printed once with its final span (an estimate waits for the message that replaces it), the raw text stream is
    not printed twice."""
    asked: list[bool] = []
    estimated = (WordTiming("Hi", 0.09, 0.29), WordTiming("there.", 0.3, 0.6, final=False))
    final = (WordTiming("there.", 0.34, 0.64),)

    async def fake_run_turn(*args: Any, on_event: Any, timings: bool, **kwargs: Any) -> TurnReport:
        asked.append(timings)
        events = (
            TextReceived("t-1", 1, "Hi there."),
            WordsReceived("t-1", 2, estimated),
            WordsReceived("t-1", 3, final, index=1),
        )
        for event in events:
            on_event(event)
        return TurnReport("t-1", outcome=TurnOutcome.COMPLETED, text="Hi there.", pcm=b"\0\0" * 24_000)

    monkeypatch.setattr(chat_cli, "run_turn", fake_run_turn)
    out = tmp_path / "chat.wav"
    argv = ["chat", "--gateway-url", "ws://127.0.0.1:9/x", "--token", "t", "--out", str(out), "--timings", "Hi."]
    assert relay_main(argv) == 0
    printed = capsys.readouterr().out
    assert asked == [True]
    assert printed.startswith("    0.09 –   0.29 s  Hi\n    0.34 –   0.64 s  there.\n")
    assert "0.30" not in printed, "an estimate is not printed"
    assert "Hi there." not in printed
    assert out.exists()
