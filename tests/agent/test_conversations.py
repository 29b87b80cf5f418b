"""``Conversations.open``: a conversation is opened (its history read) once however many turns ask for it at the same
time, off the event loop; one past its maximum age is opened anew; the history settings are checked."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime, timedelta

import pytest
from strands import Agent

from voice_agent.config import AgentConfig
from voice_agent.conversations import Conversation, Conversations
from voice_agent.errors import ConfigError


class OpeningLog:
    """A conversation factory that records each call and the thread it ran on, and holds each open until released
    (standing for the S3 reads of a restore)."""

    def __init__(self, *, started_at: datetime | None = None) -> None:
        self.calls: list[str | None] = []
        self.threads: list[int] = []
        self.release = threading.Event()
        self.started_at = started_at

    def __call__(self, session_id: str | None) -> Conversation:
        self.calls.append(session_id)
        self.threads.append(threading.get_ident())
        assert self.release.wait(60), "never released (a hang)"
        return Conversation(session_id=session_id, agent=Agent(callback_handler=None), started_at=self.started_at)


@pytest.fixture(autouse=True)
def _region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "us-east-1")  # Strands' default BedrockModel needs one; no call is made


def test_concurrent_turns_open_a_conversation_once_off_the_event_loop() -> None:
    log = OpeningLog()
    conversations = Conversations(log)

    async def go() -> list[Conversation]:
        first = asyncio.create_task(conversations.open("session-a"))
        second = asyncio.create_task(conversations.open("session-a"))
        await asyncio.sleep(0)  # both are waiting for the one opening
        loop_thread = threading.get_ident()
        log.release.set()
        opened = await asyncio.gather(first, second)
        assert log.threads and all(thread != loop_thread for thread in log.threads)
        return [*opened, await conversations.open("session-a")]

    opened = asyncio.run(asyncio.wait_for(go(), 60))
    assert log.calls == ["session-a"]
    assert opened[0] is opened[1] is opened[2]


def test_a_failed_opening_fails_every_waiting_turn_and_the_next_turn_tries_again() -> None:
    class UnavailableError(Exception):
        pass

    attempts: list[str | None] = []
    release = threading.Event()

    def factory(session_id: str | None) -> Conversation:
        attempts.append(session_id)
        assert release.wait(60), "never released (a hang)"
        if len(attempts) == 1:
            raise UnavailableError("S3 said no")
        return Conversation(session_id=session_id, agent=Agent(callback_handler=None))

    conversations = Conversations(factory)

    async def go() -> Conversation:
        waiting = [asyncio.create_task(conversations.open("session-b")) for _ in range(2)]
        await asyncio.sleep(0)
        release.set()
        outcomes = await asyncio.gather(*waiting, return_exceptions=True)
        assert [type(outcome) for outcome in outcomes] == [UnavailableError, UnavailableError]
        return await conversations.open("session-b")

    assert asyncio.run(asyncio.wait_for(go(), 60)).session_id == "session-b"
    assert attempts == ["session-b", "session-b"]


def test_a_conversation_in_memory_past_its_maximum_age_is_opened_anew() -> None:
    log = OpeningLog(started_at=datetime.now(UTC) - timedelta(days=2))
    log.release.set()
    conversations = Conversations(log, max_age=timedelta(days=1))

    async def go() -> tuple[Conversation, Conversation]:
        return await conversations.open("session-c"), await conversations.open("session-c")

    first, second = asyncio.run(asyncio.wait_for(go(), 60))
    assert first is not second and log.calls == ["session-c", "session-c"]
    young = Conversations(log, max_age=timedelta(days=3))
    assert asyncio.run(young.open("session-d")) is young.get("session-d")


def test_the_window_must_hold_a_prompt_and_its_reply() -> None:
    with pytest.raises(ConfigError, match="history_window_messages must be at least 2"):
        AgentConfig(history_window_messages=1)
    assert AgentConfig().history_bucket is None and AgentConfig().history_window_messages == 40
