"""One request's synthesis, driven through the scheduler: plan once, then render segment by segment.

Used by every route (WebSocket, ``/invocations``, OpenAI), so all of them stream the same way: the plan (G2P and
splitting into segments of at most 510 tokens) runs off the event loop first, so bad input fails before any
audio; then each segment is rendered as one scheduler job and its PCM handed over as soon as it exists.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from functools import partial

from kokoro_server.engines import Segment
from kokoro_server.pcm import float_to_pcm16
from kokoro_server.scheduler import Scheduler, SchedulerSession
from kokoro_server.speech import SpeechEngine
from relay_core import limits


class Synthesis:
    """Speak ``text`` with ``voice`` at ``speed`` as jobs of ``session``. Drive it from one coroutine at a time."""

    def __init__(
        self,
        engine: SpeechEngine,
        scheduler: Scheduler,
        session: SchedulerSession,
        *,
        text: str,
        voice: str,
        speed: float,
    ) -> None:
        self.engine = engine
        self.scheduler = scheduler
        self.session = session
        self.text = text
        self.voice = voice
        self.speed = speed
        self.started = time.perf_counter()
        self.first_audio_s: float | None = None
        self.audio_bytes = 0
        self.segments_done = 0
        self._segments: list[Segment] | None = None

    async def plan(self) -> int:
        """Plan the text (raises the engine's errors for a bad voice or speed); returns the segment count."""
        if self._segments is None:
            plan = partial(self.engine.plan, self.text, voice=self.voice, speed=self.speed)
            self._segments = await self.scheduler.plan(self.session, plan)
        return len(self._segments)

    async def pcm_segments(self) -> AsyncGenerator[bytes]:
        """s16le PCM of each segment, in order, each as soon as it is rendered. Plans first if needed."""
        await self.plan()
        assert self._segments is not None
        for index, segment in enumerate(self._segments):
            job = partial(self._render, segment)
            pcm = await self.scheduler.run(self.session, index, job)
            self.segments_done += 1
            if not pcm:
                continue
            if self.first_audio_s is None:
                self.first_audio_s = time.perf_counter() - self.started
            self.audio_bytes += len(pcm)
            yield pcm

    def _render(self, segment: Segment) -> bytes:
        """The job body, on a worker thread: one segment to PCM bytes."""
        return float_to_pcm16(self.engine.render(segment, voice=self.voice, speed=self.speed))

    @property
    def elapsed_s(self) -> float:
        return time.perf_counter() - self.started

    @property
    def duration_s(self) -> float:
        return self.audio_bytes / (limits.SAMPLE_WIDTH_BYTES * self.engine.sample_rate)
