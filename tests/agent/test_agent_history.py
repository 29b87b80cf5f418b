"""A conversation outlives the agent process: its history in Strands' ``S3SessionManager`` on a bucket of a real moto
server (its own process, over HTTP), the model Strands' ``BedrockModel`` on the local Bedrock stand-in's echo model
(which records each request's messages), the real TTS container app speaking.

The process test kills a real ``voice-agent`` (SIGKILL, as a crash or a redeploy would) between two turns and starts
another; the others run the agent service in this process, a new service standing for a new process."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from strands import Agent
from tests.conftest import free_port

from relay_cli.agent_client import collect_turn
from relay_core.agent.defaults import HISTORY_AGENT_ID, HISTORY_PREFIX
from relay_core.agent.events import AgentCancel, AgentEnd, AgentPayload, parse_event
from relay_core.word_timings import INTERRUPTED_MARK, WordTiming, WordTimings, apply_word_timings
from relay_local.moto_s3 import S3_ENDPOINT_ENV, LocalBucket
from relay_transport.ws import WsTransport
from voice_agent.app import VoiceAgentService
from voice_agent.config import AgentConfig
from voice_agent.history import HistoryStore

pytestmark = pytest.mark.slow

START_TIMEOUT_S = 120.0
"""Only catches a hang: how long a process may take to answer (imports on a loaded machine)."""
FIRST = "My name is Ada."
SECOND = "What is my name?"


def _wait_for(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the process behind {url} exited with {process.returncode}"
        try:
            if httpx.get(url, timeout=2.0).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{url} did not answer within {START_TIMEOUT_S:.0f} s")


@pytest.fixture(scope="module")
def moto_s3() -> Iterator[str]:
    """A moto server in its own process (so no moto state of this process is touched); its endpoint URL."""
    port = free_port()
    exe = Path(sys.executable).with_name("moto_server")
    process = subprocess.Popen(
        [str(exe), "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for(f"{url}/moto-api/", process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture
def history(moto_s3: str, bedrock_env: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalBucket]:
    """A fresh bucket on ``moto_s3``; this process's boto3 S3 calls go there for the test."""
    monkeypatch.setenv(S3_ENDPOINT_ENV, moto_s3)
    bucket = LocalBucket(f"history-{uuid.uuid4().hex[:12]}", moto_s3).create()
    yield bucket
    bucket.delete()


def _session() -> str:
    return f"history-test-session-{uuid.uuid4().hex}"


def _sent(bedrock_env: Any) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in bedrock_env.runtime.last_request.messages]


def _stored(bucket: LocalBucket, session_id: str) -> list[tuple[str, str]]:
    """The conversation's messages (role, text) as Strands stored them (a redacted one as its redaction), in order."""
    prefix = f"{HISTORY_PREFIX}session_{session_id}/agents/agent_{HISTORY_AGENT_ID}/messages/"
    keys = sorted(bucket.keys(prefix), key=lambda key: int(key.rsplit("_", 1)[1].removesuffix(".json")))
    records = [json.loads(bucket.client.get_object(Bucket=bucket.name, Key=key)["Body"].read()) for key in keys]
    messages = [record["redact_message"] or record["message"] for record in records]
    return [(m["role"], "".join(block.get("text", "") for block in m["content"])) for m in messages]


class AgentProcess:
    """``voice-agent`` as its own process, keeping its conversations in ``bucket``."""

    def __init__(self, *, tts_url: str, bucket: LocalBucket) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, S3_ENDPOINT_ENV: bucket.endpoint_url, "VOICE_AGENT_HISTORY_BUCKET": bucket.name}
        exe = Path(sys.executable).with_name("voice-agent")
        self.process = subprocess.Popen(
            [str(exe), "--port", str(self.port), "--tts-url", tts_url, "--speak-tokens-per-s", "1000"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        _wait_for(f"{self.url}/ping", self.process)

    def turn(self, prompt: str, session_id: str) -> AgentEnd:
        async def go() -> Any:
            async with httpx.AsyncClient() as client:
                payload = AgentPayload(prompt=prompt, request_id=uuid.uuid4().hex)
                return await collect_turn(client, self.url, payload, session_id=session_id)

        result = asyncio.run(asyncio.wait_for(go(), START_TIMEOUT_S))
        assert isinstance(result.terminal, AgentEnd) and result.terminal.status == "completed", result.events[-1:]
        return result.terminal

    def kill(self) -> str:
        """SIGKILL, as a crash would end it; its output."""
        self.process.send_signal(signal.SIGKILL)
        out, _ = self.process.communicate(timeout=30)
        return out.decode("utf-8", errors="replace")


def test_a_killed_and_restarted_agent_continues_the_conversation(
    tts_server: Any, bedrock_env: Any, history: LocalBucket
) -> None:
    session_id = _session()
    first = AgentProcess(tts_url=tts_server.ws_url, bucket=history)
    first.turn(FIRST, session_id)
    log = first.kill()
    assert f"conversations are kept in s3://{history.name}/{HISTORY_PREFIX}" in log

    second = AgentProcess(tts_url=tts_server.ws_url, bucket=history)
    try:
        second.turn(SECOND, session_id)
        assert _sent(bedrock_env) == [("user", FIRST), ("assistant", FIRST), ("user", SECOND)]
        second.turn(SECOND, _session())  # another conversation (a new one) knows nothing of it
        assert _sent(bedrock_env) == [("user", SECOND)]
    finally:
        second.kill()


def test_without_a_bucket_the_agent_says_history_stays_in_memory(tts_server: Any, bedrock_env: Any) -> None:
    service = VoiceAgentService(AgentConfig(tts_url=tts_server.ws_url))
    assert service.history is None
    assert service.history_label.startswith("in memory only (set VOICE_AGENT_HISTORY_BUCKET")


def _service(tts_server: Any, bucket: LocalBucket, **config: Any) -> VoiceAgentService:
    settings = AgentConfig(tts_url=tts_server.ws_url, speak_tokens_per_s=400.0, history_bucket=bucket.name, **config)
    return VoiceAgentService(settings, transport=WsTransport(tts_server.ws_url, open_timeout_s=5.0))


def _turn(service: VoiceAgentService, prompt: str, session_id: str) -> list[Any]:
    async def go() -> list[Any]:
        payload = AgentPayload(prompt=prompt, request_id=uuid.uuid4().hex, timings=True)
        return [parse_event(obj) async for obj in service.turn(payload, payload.request_id or "", session_id)]

    events = asyncio.run(asyncio.wait_for(go(), START_TIMEOUT_S))
    assert isinstance(events[-1], AgentEnd) and events[-1].status == "completed", events[-1]
    return events


def _timed_words(events: list[Any]) -> list[WordTiming]:
    words: list[WordTiming] = []
    for event in events:
        if isinstance(event, WordTimings):
            apply_word_timings(words, event)
    return words


def test_a_barge_in_cut_is_what_is_stored_and_what_a_new_process_sends(
    tts_server: Any, bedrock_env: Any, history: LocalBucket
) -> None:
    prompt = "Hello there. One two three four five."
    session_id = _session()
    service = _service(tts_server, history)
    words = _timed_words(_turn(service, prompt, session_id))
    between_4th_and_5th = round(500 * (words[3].midpoint_s + words[4].midpoint_s))
    service.cancel(AgentCancel(played_ms=between_4th_and_5th), session_id)
    assert service.history is not None and service.history.flush(session_id)  # the cut is a queued write
    cut = f"Hello there. One two… {INTERRUPTED_MARK}"
    assert _stored(history, session_id) == [("user", prompt), ("assistant", cut)]

    _turn(_service(tts_server, history), "Sorry, go on.", session_id)
    assert _sent(bedrock_env) == [("user", prompt), ("assistant", cut), ("user", "Sorry, go on.")]


def test_the_model_sees_only_the_window_and_a_restart_restores_only_it(
    tts_server: Any, bedrock_env: Any, history: LocalBucket
) -> None:
    session_id = _session()
    service = _service(tts_server, history, history_window_messages=2)
    _turn(service, "One.", session_id)
    _turn(service, "Two.", session_id)
    assert _sent(bedrock_env) == [("user", "One."), ("assistant", "One."), ("user", "Two.")]
    _turn(_service(tts_server, history, history_window_messages=2), "Three.", session_id)
    assert _sent(bedrock_env) == [("user", "Two."), ("assistant", "Two."), ("user", "Three.")]
    assert len(_stored(history, session_id)) == 6, "the store keeps the whole log until its lifecycle expiry"


def _agent_with(store: HistoryStore, session_id: str, prompt: str | None = None) -> Agent:
    """An agent on the conversation, with what its opening stored written (the store queues its writes)."""
    messages: list[Any] = [] if prompt is None else [{"role": "user", "content": [{"text": prompt}]}]
    agent = Agent(messages=messages, agent_id=HISTORY_AGENT_ID, session_manager=store.session_manager(session_id))
    assert store.flush(session_id)
    return agent


def test_a_conversation_past_its_maximum_age_starts_over(history: LocalBucket) -> None:
    session_id = _session()
    _agent_with(HistoryStore(history.name, HISTORY_PREFIX), session_id, "remember me")
    assert _agent_with(HistoryStore(history.name, HISTORY_PREFIX), session_id).messages[0]["content"] == [
        {"text": "remember me"}
    ]
    too_old = HistoryStore(history.name, HISTORY_PREFIX, max_age=timedelta(0))
    assert _agent_with(too_old, session_id).messages == []
    assert _stored(history, session_id) == []


def test_a_partly_expired_conversation_starts_over_without_its_leftovers(history: LocalBucket) -> None:
    session_id = _session()
    store = HistoryStore(history.name, HISTORY_PREFIX)
    _agent_with(store, session_id, "half gone")
    history.client.delete_object(Bucket=history.name, Key=f"{HISTORY_PREFIX}session_{session_id}/session.json")
    assert _agent_with(store, session_id).messages == []
    session = f"{HISTORY_PREFIX}session_{session_id}/"
    assert history.keys(session) == [f"{session}agents/agent_{HISTORY_AGENT_ID}/agent.json", f"{session}session.json"]


def test_every_conversation_of_a_store_shares_one_s3_client(history: LocalBucket) -> None:
    """A boto3 session and client cost about 12 MB and 0.2 s each: a process holding 256 conversations must not
    make 256 of them."""
    store = HistoryStore(history.name, HISTORY_PREFIX)
    first, second = (store.session_manager(_session()) for _ in range(2))
    assert first.client is second.client is store.client
    assert store.writer.flush(timeout=START_TIMEOUT_S)
    assert "strands-agents" in str(getattr(first.client.meta.config, "user_agent_extra", ""))


def _record_s3_calls(store: HistoryStore) -> list[tuple[str, bool]]:
    """Every S3 call the store's client makes from now on: (operation, made on the store's writer thread)."""
    calls: list[tuple[str, bool]] = []

    def record(model: Any, **_: Any) -> None:
        calls.append((model.name, store.writer.on_writer_thread()))

    store.client.meta.events.register("before-call.s3", record)
    return calls


def test_a_turn_waits_for_no_s3_write_before_its_model_call(
    tts_server: Any, bedrock_env: Any, history: LocalBucket
) -> None:
    """Strands stores from its hooks on the agent's event loop, before the model is asked: those writes are queued
    for the store's writer thread. A new conversation's first turn makes one S3 call of its own (a listing: is
    anything stored?), later turns none; every write is the writer's, and done when the turn ends."""
    service = _service(tts_server, history)
    assert service.history is not None
    calls = _record_s3_calls(service.history)
    session_id = _session()
    _turn(service, "One.", session_id)
    assert [name for name, on_writer in calls if not on_writer] == ["ListObjectsV2"]
    assert {name for name, on_writer in calls if on_writer} >= {"PutObject"}
    assert _stored(history, session_id) == [("user", "One."), ("assistant", "One.")]

    calls.clear()
    _turn(service, "Two.", session_id)
    assert [name for name, on_writer in calls if not on_writer] == []
    assert _stored(history, session_id)[2:] == [("user", "Two."), ("assistant", "Two.")]


def test_a_queued_write_stores_the_message_as_it_was_when_strands_added_it(history: LocalBucket) -> None:
    """A write is queued with a copy of its data: Strands changing its message object afterwards (as a barge-in's
    redaction does) reaches the store only through its own update, in order."""
    store = HistoryStore(history.name, HISTORY_PREFIX)
    session_id = _session()
    manager = store.session_manager(session_id)
    agent = Agent(agent_id=HISTORY_AGENT_ID, session_manager=manager)
    release = threading.Event()
    store.writer.submit(session_id, "a write held back by the test", release.wait)
    message: Any = {"role": "user", "content": [{"text": "as said"}]}
    manager.append_message(message, agent)
    message["content"][0]["text"] = "changed after"
    assert not store.flush(session_id, timeout=0.05), "the held write keeps the queue waiting"
    release.set()
    assert store.flush(session_id)
    assert _stored(history, session_id) == [("user", "as said")]
