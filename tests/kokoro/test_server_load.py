"""Many sessions on one engine, clients that vanish, and an engine that fails: the server keeps its promises."""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect

from kokoro_server.engines import Engine, InferenceError, Segment
from kokoro_server.engines.speech_engine import DelegatingEngine
from kokoro_server.scheduled_speech import speak_offline
from relay_core.agent.events import AgentFailed, AudioStreamStart, parse_event
from relay_core.sse import SseDecoder
from relay_core.tts.client import AudioReceived, RequestEnded, TtsClientSession
from relay_core.tts.messages import SynthesisComplete, Synthesize, TtsErrorCode, TtsFailed

pytestmark = pytest.mark.slow

TEXTS = ["Yes.", "No.", "Hi. Bye.", "Okay."]


class ExplodingEngine(DelegatingEngine):
    """The real engine (whole segments), except that rendering any segment containing 'explode' fails like a
    broken model."""

    def __init__(self, inner: Engine) -> None:
        super().__init__(inner, streams=False)

    def before_render(self, segment: Segment) -> None:
        if "explode" in segment.text.lower():
            raise InferenceError("injected failure: the model broke on this segment")


async def speak(url: str, text: str, request_id: str) -> tuple[bytes, RequestEnded]:
    """One session, one request: its PCM and how it ended."""
    client = TtsClientSession()
    pcm = bytearray()
    async with connect(url, max_size=None, open_timeout=60) as ws:
        await ws.send(client.synthesize(Synthesize(text=text, request_id=request_id)).encode())
        while True:
            for event in client.receive_frame(await ws.recv()):
                if isinstance(event, AudioReceived):
                    pcm.extend(event.pcm)
                elif isinstance(event, RequestEnded):
                    return bytes(pcm), event


def digest(pcm: bytes) -> str:
    return hashlib.sha256(pcm).hexdigest()


def test_twenty_concurrent_sessions_get_exactly_their_own_audio(onnx_engine: Engine, serve_tts: Any) -> None:
    # what each text gives in a fresh session alone (the server's default silence and first-fragment policy)
    alone = {text: digest(speak_offline(onnx_engine, text)) for text in TEXTS}

    async def crowd(url: str) -> list[tuple[str, bytes, RequestEnded]]:
        jobs = [(TEXTS[i % len(TEXTS)], f"s{i}") for i in range(20)]
        results = await asyncio.gather(*(speak(url, text, rid) for text, rid in jobs))
        return [(text, pcm, ended) for (text, _), (pcm, ended) in zip(jobs, results, strict=True)]

    with serve_tts(onnx_engine, workers=2, max_sessions=20) as server:
        results = asyncio.run(asyncio.wait_for(crowd(server.ws_url), 280))
    assert len(results) == 20
    for text, pcm, ended in results:
        assert isinstance(ended.outcome, SynthesisComplete)
        assert digest(pcm) == alone[text], text


def test_a_client_that_disconnects_mid_synthesis_frees_its_work(onnx_engine: Engine, serve_tts: Any) -> None:
    long_text = "One. Two. Three. Four. Five. Six."

    async def vanish(url: str) -> None:
        client = TtsClientSession()
        async with connect(url, max_size=None) as ws:
            await ws.send(client.synthesize(Synthesize(text=long_text, request_id="long")))
            for i in range(3):
                await ws.send(client.synthesize(Synthesize(text=long_text, request_id=f"queued-{i}")))
            while not any(isinstance(e, AudioReceived) for e in client.receive_frame(await ws.recv())):
                pass
            ws.transport.abort()  # gone without a close handshake, mid-synthesis

    with serve_tts(onnx_engine) as server:
        scheduler = server.app.state.server.scheduler
        asyncio.run(asyncio.wait_for(vanish(server.ws_url), 120))
        at_disconnect = scheduler.stats().completed
        # at most the segment being rendered at that moment finishes; then nothing is queued or running
        assert scheduler.wait_idle(timeout=30)
        freed = scheduler.stats()
        assert freed.queued == 0
        assert freed.completed - at_disconnect <= 2
        # and nothing of the dead session runs later: another session's request is all that runs next
        pcm, ended = asyncio.run(asyncio.wait_for(speak(server.ws_url, "Yes.", "after"), 120))
        assert isinstance(ended.outcome, SynthesisComplete)
        assert pcm
        assert scheduler.wait_idle(timeout=30)
        after = scheduler.stats().completed - freed.completed
        # the same request once more, on a fresh session of a server with nothing else to do: the same jobs (its
        # plan, its front end and first chunk, its later chunks), so none of the first run's jobs was the dead one's
        asyncio.run(asyncio.wait_for(speak(server.ws_url, "Yes.", "control"), 120))
        assert scheduler.wait_idle(timeout=30)
        assert after == scheduler.stats().completed - freed.completed - after >= 2


class RecordingEngine(ExplodingEngine):
    """The real engine, remembering the text of every segment it rendered."""

    def __init__(self, inner: Engine) -> None:
        super().__init__(inner)
        self.rendered: list[str] = []
        self.started = threading.Event()

    def before_render(self, segment: Segment) -> None:
        self.rendered.append(segment.text)
        self.started.set()
        super().before_render(segment)


def test_a_whole_file_client_that_disconnects_frees_its_work(onnx_engine: Engine, serve_tts: Any) -> None:
    doomed = ["Alpha.", "Bravo.", "Charlie.", "Delta.", "Echo.", "Foxtrot.", "Golf.", "Hotel."]
    body = json.dumps({"text": " ".join(doomed), "stream": False}).encode()
    engine = RecordingEngine(onnx_engine)

    async def post_and_vanish(port: int) -> None:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        head = f"POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
        writer.write(head.encode() + b"\r\n\r\n" + body)
        await writer.drain()
        assert await asyncio.to_thread(engine.started.wait, 60)  # rendering is under way
        writer.transport.abort()  # gone before the whole file could be answered

    with serve_tts(engine) as server:
        port = int(server.http_url.rsplit(":", 1)[1])
        asyncio.run(asyncio.wait_for(post_and_vanish(port), 120))
        # Another client's eight segments: with the fair order, any segment still pending for the dead request
        # would be rendered in between them, so once this answer is complete the dead request has had its chance.
        with httpx.Client(base_url=server.http_url, timeout=120) as http:
            marker = http.post("/invocations", json={"text": "One. Two. Three. Four. Five. Six. Seven. Eight."})
        assert marker.status_code == 200
    rendered_for_nobody = [text for text in engine.rendered if text in doomed]
    # the segment in progress at the disconnect (and at most one more already handed to a worker) finish
    assert len(rendered_for_nobody) <= 3, rendered_for_nobody


def test_an_engine_failure_fails_that_request_only(onnx_engine: Engine, serve_tts: Any) -> None:
    async def session(url: str) -> dict[str, tuple[bytes, RequestEnded]]:
        client = TtsClientSession()
        pcm: dict[str, bytearray] = {}
        ended: dict[str, RequestEnded] = {}
        async with connect(url, max_size=None) as ws:
            for text, rid in [("Please explode.", "bad"), ("Fine. Explode now.", "half"), ("Yes.", "good")]:
                await ws.send(client.synthesize(Synthesize(text=text, request_id=rid)))
            while len(ended) < 3:
                for event in client.receive_frame(await ws.recv()):
                    if isinstance(event, AudioReceived):
                        pcm.setdefault(event.request_id, bytearray()).extend(event.pcm)
                    elif isinstance(event, RequestEnded):
                        ended[event.request_id] = event
        return {rid: (bytes(pcm.get(rid, b"")), end) for rid, end in ended.items()}

    with serve_tts(ExplodingEngine(onnx_engine)) as server:
        outcomes = asyncio.run(asyncio.wait_for(session(server.ws_url), 120))
        with httpx.Client(base_url=server.http_url, timeout=120) as http:
            whole = http.post("/invocations", json={"text": "Explode.", "stream": False})
            sse = http.post(
                "/invocations",
                json={"text": "Yes. Explode.", "request_id": "h"},
                headers={"Accept": "text/event-stream"},
            )
            after = http.post("/invocations", json={"text": "Yes.", "format": "pcm"})
    for rid in ("bad", "half"):
        pcm, end = outcomes[rid]
        assert isinstance(end.outcome, TtsFailed)
        assert end.outcome.code == TtsErrorCode.SYNTHESIS_FAILED
        assert "injected failure" in end.outcome.message
    assert outcomes["half"][0]  # the segment before the failure was already sent
    pcm, end = outcomes["good"]
    assert isinstance(end.outcome, SynthesisComplete)
    assert pcm
    assert whole.status_code == 500
    assert whole.json()["error"]["code"] == "synthesis_failed"
    events = [parse_event(e.data) for e in SseDecoder().feed(sse.content)]
    assert isinstance(events[0], AudioStreamStart)
    assert isinstance(events[-1], AgentFailed)
    assert events[-1].request_id == "h"
    assert json.loads(sse.content.decode().split("data: ")[-1])["code"] == "synthesis_failed"
    assert after.status_code == 200
    assert after.content
