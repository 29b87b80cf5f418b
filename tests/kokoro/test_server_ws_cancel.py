"""A WebSocket ``cancel`` drops the session's queued scheduler job at once, instead of waiting for a worker."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from websockets.asyncio.client import connect

from kokoro_server.engines import Engine, Segment
from kokoro_server.engines.speech_engine import DelegatingEngine
from relay_core.tts.client import RequestEnded, RequestStarted, TtsClientSession
from relay_core.tts.messages import SynthesisCancelled, SynthesisComplete, Synthesize

pytestmark = pytest.mark.slow

GATE_DEADLINE_S = 60.0


class GatedEngine(DelegatingEngine):
    """The real engine, except that a segment containing 'hold' renders only once :attr:`gate` is set, and every
    rendered segment's text is recorded."""

    def __init__(self, inner: Engine) -> None:
        super().__init__(inner, streams=False)
        self.gate = threading.Event()
        self.holding = threading.Event()
        self.rendered: list[str] = []

    def before_render(self, segment: Segment) -> None:
        self.rendered.append(segment.text)
        if "hold" in segment.text.lower():
            self.holding.set()
            if not self.gate.wait(GATE_DEADLINE_S):
                raise TimeoutError("the test never opened the gate")


def wait_until(condition: Any, within_s: float) -> None:
    """Poll ``condition`` (another thread changes it) until true; fail after ``within_s`` seconds."""
    deadline = time.monotonic() + within_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {within_s} s")
        time.sleep(0.02)


def test_cancel_drops_the_queued_segment_without_waiting_for_a_worker(onnx_engine: Engine, serve_tts: Any) -> None:
    engine = GatedEngine(onnx_engine)

    async def scenario(url: str, scheduler: Any) -> tuple[float, RequestEnded, RequestEnded]:
        holder, waiter = TtsClientSession(), TtsClientSession()
        async with connect(url, max_size=None) as busy, connect(url, max_size=None) as ws:
            await busy.send(holder.synthesize(Synthesize(text="Hold on.", request_id="busy")))
            await asyncio.to_thread(engine.holding.wait, GATE_DEADLINE_S)  # the only worker is now taken
            await ws.send(waiter.synthesize(Synthesize(text="Never rendered.", request_id="queued")))
            started = [e for e in waiter.receive_frame(await ws.recv()) if isinstance(e, RequestStarted)]
            assert started  # planned, its first segment waits for the worker
            await asyncio.to_thread(wait_until, lambda: scheduler.stats().queued == 1, 30)
            sent = time.perf_counter()
            await ws.send(waiter.cancel("queued"))
            async with asyncio.timeout(10):  # not after the held segment: the gate is still closed
                (cancelled,) = [e for e in waiter.receive_frame(await ws.recv()) if isinstance(e, RequestEnded)]
            waited = time.perf_counter() - sent
            assert not engine.gate.is_set()
            engine.gate.set()
            async with asyncio.timeout(60):
                while True:
                    done = [e for e in holder.receive_frame(await busy.recv()) if isinstance(e, RequestEnded)]
                    if done:
                        return waited, cancelled, done[0]

    with serve_tts(engine, workers=1) as server:
        scheduler = server.app.state.server.scheduler
        try:
            waited, cancelled, busy = asyncio.run(scenario(server.ws_url, scheduler))
        finally:
            engine.gate.set()
        assert scheduler.wait_idle(timeout=30)
    assert isinstance(cancelled.outcome, SynthesisCancelled)
    assert cancelled.outcome.audio_bytes == 0
    assert waited < 5.0
    assert isinstance(busy.outcome, SynthesisComplete)
    assert not any("never" in text.lower() for text in engine.rendered)
    assert scheduler.stats().queued == 0
