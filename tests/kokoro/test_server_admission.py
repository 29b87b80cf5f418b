"""A full instance queues new sessions in-band (real server, real model, loopback WebSockets): ``queued`` with the
place in line, ``/ping`` busy with the queue's length, ``admitted`` and the requests sent meanwhile spoken once a
slot frees, first come first served; past ``queue_wait_s`` one ``at_capacity`` error and a normal close.

The sessions that hold the slots send nothing (an open session holds its slot), so the tests cost one or two
short syntheses each."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect

from relay_core.close_codes import NORMAL_CLOSURE
from relay_core.tts.client import (
    AudioReceived,
    RequestEnded,
    SessionAtCapacity,
    SessionStarted,
    SessionWaiting,
    TtsClientEvent,
    TtsClientSession,
)
from relay_core.tts.messages import SynthesisComplete, Synthesize, TtsErrorCode

pytestmark = pytest.mark.slow

HANG_S = 60.0
"""Deadlines that only catch a hang."""


@asynccontextmanager
async def session(url: str) -> AsyncIterator[ClientConnection]:
    async with connect(url, max_size=None, open_timeout=HANG_S) as ws:
        yield ws


async def next_events(ws: ClientConnection, client: TtsClientSession) -> list[TtsClientEvent]:
    return client.receive_frame(await asyncio.wait_for(ws.recv(), HANG_S))


async def wait_for_ping(http: httpx.AsyncClient, status: str) -> None:
    """Poll ``/ping`` (always HTTP 200 once loaded, busy or not) until it says ``status``."""
    while True:
        ping = await http.get("/ping")
        assert ping.status_code == 200  # SageMaker would take a non-200 ping for an unhealthy container
        if ping.json()["status"] == status:
            return
        await asyncio.sleep(0.02)


async def wait_until_queued(http: httpx.AsyncClient, queued: int) -> dict[str, Any]:
    """The busy ``/ping`` once it counts ``queued`` sessions waiting."""
    while True:
        body: dict[str, Any] = (await http.get("/ping")).json()
        if body.get("queued") == queued:
            return body
        await asyncio.sleep(0.02)


def test_a_full_instance_queues_sessions_in_order_and_speaks_what_they_sent_meanwhile(
    onnx_engine: Any, serve_tts: Any
) -> None:
    async def scenario(url: str, http_url: str) -> None:
        async with httpx.AsyncClient(base_url=http_url, timeout=HANG_S) as http, session(url) as holder:
            # the holder speaks nothing: an open session holds its slot until it ends
            clients = [TtsClientSession(), TtsClientSession()]
            async with AsyncExitStack() as stack:
                sockets: list[ClientConnection] = []
                for client, text in zip(clients, ("Yes.", "No."), strict=True):
                    ws = await stack.enter_async_context(session(url))  # one after the other: an arrival order
                    sockets.append(ws)
                    await ws.send(client.synthesize(Synthesize(text=text, request_id="r")))
                    (waiting,) = await next_events(ws, client)
                    assert isinstance(waiting, SessionWaiting)
                    assert waiting.message.max_wait_s == 120
                    assert waiting.message.position == len(sockets)
                first, second = sockets
                ping = await wait_until_queued(http, 2)
                assert ping == {"status": "busy", "sessions": 1, "queued": 2, "max_sessions": 1}
                # the holder ends: its slot goes to the first in line, never to the second
                await holder.close()
                events = await next_events(first, clients[0])
                assert isinstance(events[0], SessionStarted)
                await first.send(clients[0].close())
                pcm = bytearray()
                async for frame in first:
                    for event in clients[0].receive_frame(frame):
                        if isinstance(event, AudioReceived):
                            pcm.extend(event.pcm)
                        elif isinstance(event, RequestEnded):
                            assert isinstance(event.outcome, SynthesisComplete)
                assert first.close_code == NORMAL_CLOSURE and len(pcm) > 4_800
                assert clients[1].waiting  # still in line while the first spoke
                (started, *_) = await next_events(second, clients[1])
                assert isinstance(started, SessionStarted)
            await wait_for_ping(http, "healthy")  # every slot given back

    with serve_tts(onnx_engine, max_sessions=1) as server:
        asyncio.run(asyncio.wait_for(scenario(server.ws_url, server.http_url), 4 * HANG_S))


def test_past_the_bound_a_waiting_session_ends_at_capacity_and_closes_normally(
    onnx_engine: Any, serve_tts: Any
) -> None:
    async def scenario(url: str) -> None:
        async with session(url), session(url) as late:
            client = TtsClientSession()
            await late.send(client.synthesize(Synthesize(text="Yes.", request_id="r")))
            events: list[TtsClientEvent] = []
            async for frame in late:
                events.extend(client.receive_frame(frame))
            assert isinstance(events[0], SessionWaiting)
            refused = next(e for e in events if isinstance(e, SessionAtCapacity))
            assert refused.error.code == TtsErrorCode.AT_CAPACITY and "try again" in refused.error.message
            ended = [e for e in events if isinstance(e, RequestEnded)]
            assert [e.request_id for e in ended] == ["r"]
            assert late.close_code == NORMAL_CLOSURE  # no close code to interpret: the refusal is in-band

    with serve_tts(onnx_engine, max_sessions=1, queue_wait_s=0.2) as server:
        asyncio.run(asyncio.wait_for(scenario(server.ws_url), 2 * HANG_S))
        assert server.app.state.admission.stats().refused == 1


def test_a_session_that_leaves_the_queue_gives_its_place_to_the_next(onnx_engine: Any, serve_tts: Any) -> None:
    async def scenario(url: str, http_url: str) -> None:
        async with httpx.AsyncClient(base_url=http_url, timeout=HANG_S) as http, session(url) as holder:
            async with session(url) as leaving:
                await asyncio.wait_for(leaving.recv(), HANG_S)  # queued
            async with session(url) as staying:
                client = TtsClientSession()
                (waiting,) = await next_events(staying, client)
                assert isinstance(waiting, SessionWaiting)
                await wait_until_queued(http, 1)  # the one that left is out of the line
                await holder.close()
                (started,) = await next_events(staying, client)
                assert isinstance(started, SessionStarted)
                assert json.loads((await http.get("/ping")).text)["status"] == "busy"

    with serve_tts(onnx_engine, max_sessions=1) as server:
        asyncio.run(asyncio.wait_for(scenario(server.ws_url, server.http_url), 2 * HANG_S))


def test_a_waiting_session_hears_queued_again_so_its_stream_never_idles(
    onnx_engine: Any, serve_tts: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("kokoro_server.ws_session.QUEUED_REPEAT_S", 0.05)  # 10 s in service

    async def scenario(url: str) -> None:
        async with session(url), session(url) as waiting:
            client = TtsClientSession()
            heard = [await next_events(waiting, client) for _ in range(3)]
            assert all(isinstance(e, SessionWaiting) and e.message.position == 1 for (e,) in heard)

    with serve_tts(onnx_engine, max_sessions=1) as server:
        asyncio.run(asyncio.wait_for(scenario(server.ws_url), 2 * HANG_S))
