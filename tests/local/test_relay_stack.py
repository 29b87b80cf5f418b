"""The whole local relay with the REAL gateway functions, the real agent app (speak model) and the real Kokoro
model: a mobile client's view through the local API Gateway (tests/conftest.py ``relay_stack``)."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

import boto3
import httpx
import pytest
import websockets
from websockets.exceptions import InvalidStatus

from relay_cli.agent_client import collect_turn
from relay_cli.gateway_client import TurnReport, connect_url, open_connection, run_turn
from relay_core import limits
from relay_core.agent.defaults import HISTORY_AGENT_ID, HISTORY_PREFIX
from relay_core.agent.events import AgentEnd, AgentPayload, TurnMode
from relay_core.client.messages import ClientErrorCode
from relay_core.client.session import ClientSession, Rejected, TurnEnded, TurnOutcome
from relay_local.moto_s3 import s3_client
from relay_local.relay_stack import CONNECTIONS_TABLE

SHORT = "Hello there. The gateway relays every sentence."
LONG = " ".join(
    [
        "This reply is long on purpose, so that it is still speaking when the test interrupts it.",
        "Every sentence goes to the speech model the moment it is complete.",
        "The relay numbers each message of the turn, text and audio alike.",
        "A client that drops its connection can resume from the last message it holds.",
        "A client that never comes back leaves nobody to speak to, so the turn stops.",
        "And this is the last sentence of the long reply, which nobody should hear.",
    ]
)


def _resume_window_s(stack: Any) -> float:
    return float(stack.env["RESUME_WINDOW_S"])


@dataclass(frozen=True)
class FirstTurn:
    """A user's first turn: SHORT through the gateway."""

    user: str
    report: TurnReport


@pytest.fixture(scope="module")
def short_turn(relay_stack: Any) -> FirstTurn:
    """One user's first turn, SHORT, through the gateway: the turn that the tests of one such turn read (what
    reached the client, what the agent alone speaks, what the history store kept), spoken once."""
    user = "short-turn"
    return FirstTurn(user, asyncio.run(run_turn(relay_stack.gateway_url, relay_stack.dev_token(user), SHORT)))


def _refused_status(url: str) -> int:
    async def attempt() -> int:
        with pytest.raises(InvalidStatus) as refused:
            async with websockets.connect(url):
                pass
        return refused.value.response.status_code

    return asyncio.run(attempt())


def test_the_authorizer_refuses_missing_forged_and_expired_tokens(relay_stack: Any) -> None:
    gateway = relay_stack.gateway_url
    assert _refused_status(gateway) == 401
    assert _refused_status(connect_url(gateway, "not-a-jwt")) == 401
    assert _refused_status(connect_url(gateway, relay_stack.dev_token("alice", ttl_s=-120))) == 401


def test_a_turn_through_the_gateway_speaks_exactly_what_the_agent_speaks(
    relay_stack: Any, short_turn: FirstTurn
) -> None:
    report = short_turn.report
    assert report.outcome is TurnOutcome.COMPLETED
    assert report.text == SHORT
    assert report.seqs == list(range(len(report.seqs)))
    assert report.duplicates == 0
    assert report.largest_message_bytes <= limits.APIGW_FRAME_BYTES

    async def direct() -> Any:
        async with httpx.AsyncClient() as client:
            return await collect_turn(client, relay_stack.agent_url, AgentPayload(prompt=SHORT, mode=TurnMode.BIDI))

    alone = asyncio.run(direct())
    assert isinstance(alone.terminal, AgentEnd)
    assert len(alone.pcm) > 24_000  # more than half a second of speech
    assert report.pcm == alone.pcm


def test_cancel_mid_turn_ends_it_cancelled(relay_stack: Any) -> None:
    report = asyncio.run(
        run_turn(relay_stack.gateway_url, relay_stack.dev_token("canceller"), LONG, cancel_after_first_audio=True)
    )
    assert report.outcome is TurnOutcome.CANCELLED
    assert report.seqs == list(range(len(report.seqs)))


def test_turns_back_to_back_on_one_connection_are_all_accepted(relay_stack: Any) -> None:
    """Each sendMessage goes out the moment the previous turn's terminal message arrives (every third turn is
    cancelled on its first message): none is refused turn_in_progress (issue 19, fault 1). Ten turns here over real
    sockets (about 0.8 s each); tests/functions/gateway/test_turn_handover.py runs fifty at the worst moment."""
    turns = 10

    async def scenario() -> tuple[list[str], list[str]]:
        accepted: list[str] = []
        ends: list[str] = []
        async with await open_connection(relay_stack.gateway_url, relay_stack.dev_token("back-to-back")) as ws:
            for n in range(turns):
                turn_id = f"t-b2b-{n:02d}"
                await ws.send(json.dumps({"action": "sendMessage", "prompt": "Hi.", "turn_id": turn_id}))
                while True:
                    message = json.loads(await asyncio.wait_for(ws.recv(), 60))
                    if message["type"] == "turn_accepted":
                        accepted.append(message["turn_id"])
                    elif message["type"] == "error" and "seq" not in message:
                        return accepted, [*ends, f"refused {message['code']}"]
                    elif message["type"] == "agent_start" and n % 3 == 1:
                        await ws.send(json.dumps({"action": "cancel", "turn_id": turn_id}))
                    elif message["type"] in ("agent_end", "error"):
                        ends.append(message.get("status", message.get("code")))
                        break
        return accepted, ends

    accepted, ends = asyncio.run(scenario())
    assert accepted == [f"t-b2b-{n:02d}" for n in range(turns)]
    assert len(ends) == turns and set(ends) <= {"completed", "cancelled"}
    assert "cancelled" in ends and "completed" in ends


def test_a_dropped_connection_resumes_with_nothing_lost_or_repeated(relay_stack: Any, short_turn: FirstTurn) -> None:
    whole = short_turn.report  # the same turn with no drop (the echo model speaks SHORT whatever came before)
    resumed = asyncio.run(run_turn(relay_stack.gateway_url, relay_stack.dev_token("dropper"), SHORT, drop_after=4))
    assert resumed.reconnects == 1
    assert resumed.outcome is TurnOutcome.COMPLETED
    assert resumed.seqs == list(range(len(resumed.seqs)))
    assert resumed.text == whole.text
    assert resumed.pcm == whole.pcm


async def _start_then_drop(gateway_url: str, token: str, prompt: str, messages: int) -> ClientSession:
    session = ClientSession(collect_audio=True)
    websocket = await open_connection(gateway_url, token)
    await websocket.send(session.send_message(prompt))
    received = 0
    while received < messages:
        session.receive(await asyncio.wait_for(websocket.recv(), 60))
        received += 1
    websocket.transport.abort()
    await websocket.wait_closed()
    return session


async def _resume(gateway_url: str, token: str, session: ClientSession) -> list[Any]:
    """Reconnect and resume ``session``'s turn: the events until the turn's end."""
    async with await open_connection(gateway_url, token) as websocket:
        for message in session.resume_all():
            await websocket.send(message)
        events: list[Any] = []
        while not any(isinstance(e, TurnEnded) for e in events):
            events += session.receive(await asyncio.wait_for(websocket.recv(), 30))
        return events


def test_a_client_gone_for_good_stops_the_agent_turn_and_the_tts_work_and_a_late_resume_is_expired(
    relay_stack: Any, tts_server: Any
) -> None:
    """One client drops mid-turn and is gone past the resume window (one drop and one window for what three tests
    each waited out): the relay gives it up and closes the agent's SSE stream (its turn); nothing synthesizes for
    nobody (the container's scheduler goes idle within a bound and runs no further synthesis job); a resume after
    the window is refused as expired."""
    scheduler = tts_server.app.state.server.scheduler
    token = relay_stack.dev_token("leaver")
    assert relay_stack.lambdas.wait_idle(timeout_s=60)
    started = time.monotonic()
    session = asyncio.run(_start_then_drop(relay_stack.gateway_url, token, LONG, messages=3))
    dropped_at = time.monotonic()
    assert relay_stack.lambdas.wait_idle(timeout_s=_resume_window_s(relay_stack) + 30)  # the relay gave up
    assert relay_stack.agentcore.open_streams == 0  # the agent's SSE stream (its turn) was closed
    assert relay_stack.lambdas.failed == 0
    assert time.monotonic() - started < 60

    deadline = time.monotonic() + 10
    while (stats := scheduler.stats()).queued or stats.running:
        assert time.monotonic() < deadline, f"the TTS still works for a client that left: {stats}"
        time.sleep(0.05)
    done = stats.completed
    time.sleep(1.5)  # an observation window, not a wait for something: nothing may start in it
    after = scheduler.stats()
    assert (after.completed, after.queued, after.running) == (done, 0, 0)

    time.sleep(max(0.0, dropped_at + _resume_window_s(relay_stack) + 2 - time.monotonic()))  # outwait the window
    events = asyncio.run(_resume(relay_stack.gateway_url, token, session))
    rejected = [e for e in events if isinstance(e, Rejected)]
    assert rejected and rejected[0].code == ClientErrorCode.RESUME_EXPIRED
    assert [e.outcome for e in events if isinstance(e, TurnEnded)] == [TurnOutcome.EXPIRED]


def test_unknown_actions_and_bad_json_get_an_error_and_the_connection_stays(relay_stack: Any) -> None:
    async def scenario() -> list[dict[str, Any]]:
        async with await open_connection(relay_stack.gateway_url, relay_stack.dev_token("fumbler")) as websocket:
            answers = []
            frames: tuple[str | bytes, ...] = (
                json.dumps({"action": "dance"}),
                "{not json",
                json.dumps({"prompt": "no action"}),
                b"\xff\xfe not UTF-8",  # a binary frame that is not UTF-8 (it was an internal error)
            )
            for message in frames:
                await websocket.send(message)
                answers.append(json.loads(await asyncio.wait_for(websocket.recv(), 30)))
            return answers

    answers = asyncio.run(scenario())
    assert all(a["type"] == "error" and "seq" not in a for a in answers)
    assert answers[0]["code"] == ClientErrorCode.UNKNOWN_ACTION
    assert "sendMessage" in answers[0]["message"]
    assert answers[1]["code"] in (ClientErrorCode.INVALID_JSON, ClientErrorCode.UNKNOWN_ACTION)
    assert answers[3]["code"] == ClientErrorCode.INVALID_JSON and "UTF-8" in answers[3]["message"]


def test_a_frame_over_32_kb_closes_the_connection_with_1009(relay_stack: Any) -> None:
    async def scenario() -> int | None:
        async with await open_connection(relay_stack.gateway_url, relay_stack.dev_token("oversharer")) as websocket:
            await websocket.send(json.dumps({"action": "sendMessage", "prompt": "x" * limits.APIGW_FRAME_BYTES}))
            await websocket.wait_closed()
            return websocket.close_code

    assert asyncio.run(scenario()) == 1009


def test_the_web_origin_serves_config_and_proxies_the_agent(relay_stack: Any) -> None:
    config = httpx.get(f"{relay_stack.web_url}/config.json").json()
    assert config["gateway_url"] == relay_stack.gateway_url
    assert config["token"].count(".") == 2
    assert config["agent_url"] == f"{relay_stack.web_url}/agent"
    with httpx.stream(
        "POST", f"{config['agent_url']}/invocations", json={"prompt": "Hi.", "mode": "batch"}, timeout=60
    ) as answer:
        assert answer.headers["content-type"].startswith("text/event-stream")
        body = b"".join(answer.iter_bytes())
    assert b'"agent_end"' in body


def test_the_stack_keeps_each_conversation_in_its_moto_s3(relay_stack: Any, short_turn: FirstTurn) -> None:
    """The stack's agent stores a user's conversation as AWS's does: Strands' layout in the history bucket, under the
    AgentCore session id the gateway gave the user (so an agent restarted beside ``relay up`` continues it)."""
    user, report = short_turn.user, short_turn.report
    assert report.outcome is TurnOutcome.COMPLETED
    table = boto3.client(
        "dynamodb",
        endpoint_url=relay_stack.dynamodb_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    item = table.get_item(TableName=CONNECTIONS_TABLE, Key={"pk": {"S": f"conversation#{user}"}})["Item"]
    session_id = item["session_id"]["S"]
    bucket = relay_stack.history
    prefix = f"{HISTORY_PREFIX}session_{session_id}/agents/agent_{HISTORY_AGENT_ID}/messages/"
    keys = sorted(bucket.keys(prefix), key=lambda key: int(key.rsplit("_", 1)[1].removesuffix(".json")))
    client = s3_client(relay_stack.dynamodb_url)
    stored = [json.loads(client.get_object(Bucket=bucket.name, Key=key)["Body"].read())["message"] for key in keys]
    assert [(m["role"], m["content"][0]["text"]) for m in stored] == [("user", SHORT), ("assistant", SHORT)]
