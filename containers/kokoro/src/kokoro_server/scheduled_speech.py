"""One request's speech rendered through the scheduler: plan once, then render segment by segment.

Used by every route (WebSocket, ``/invocations``, OpenAI), so all of them stream the same way and speak by the
same policy (the scheduler's :class:`kokoro_server.policy.SpeechPolicy`):

- the plan (G2P and splitting into segments of at most 510 tokens) runs off the event loop first, so bad input
  fails before any audio. When the request asks for it, or by default while the session has heard nothing yet
  and the decoder does not stream, the first segment is cut early at a clause mark or phrase boundary
  (:func:`relay_core.text.segmenter.first_fragment`);
- each segment is rendered as one scheduler job (first fragments of sessions still waiting for their first sound
  go first) and shaped by :mod:`kokoro_server.silence` on the worker thread: the model's padding trimmed, and the
  pause for the boundary before it put in front (none before the first sound of a session; a sentence pause
  before a later request of a session, decided by how the previous request's text ended);
- with :attr:`SpeechPolicy.stream_decoder` on and an engine that streams (``render_stream``), a segment a listener
  is waiting on (:meth:`SpeechPolicy.streams_segment`: nothing of the session heard yet, so its first chunk is the
  first sound; or, after it, too little of the request's audio ahead of it) is rendered as several jobs instead:
  its front end and first decoder chunk, then one job per later chunk, each shaped by
  :class:`kokoro_server.stream_shaper.StreamShaper` (the same cuts and pause as the whole segment gets) and handed
  over as it exists (for a request with word timings, up to the end of its last word already timed:
  :mod:`kokoro_server.word_timer`); between chunks, other sessions' jobs run by the scheduler's priority. The
  choice depends on the request's plan and audio only, never on time or load;
- its PCM is handed over as soon as it exists. :attr:`ScheduledSpeech.shaped` records, per segment, what the silence
  policy did (samples cut at the start and the end, pause samples added), for word timings.

Identical input (text, voice, speed, policy, and what the session said before) gives identical PCM.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Callable, Iterator
from dataclasses import dataclass
from functools import partial

import numpy as np
import numpy.typing as npt

from kokoro_server.engines import Segment
from kokoro_server.engines.speech_engine import SpeechEngine
from kokoro_server.pcm import float_to_pcm16
from kokoro_server.policy import SpeechPolicy
from kokoro_server.scheduler import Scheduler, SchedulerSession
from kokoro_server.silence import Boundary, boundary_after, shape_segment
from kokoro_server.stream_shaper import StreamShaper
from relay_core import limits
from relay_core.text.segmenter import first_fragment


@dataclass(frozen=True, slots=True)
class ShapedInfo:
    """What the silence policy did to one rendered segment (the audio itself has been sent)."""

    segment: Segment
    boundary: Boundary
    raw_samples: int
    """Samples the model produced."""
    cut_start_samples: int
    cut_end_samples: int
    pause_samples: int
    """Zero samples put before the kept audio; the segment's audio is ``pause + raw[cut_start : raw - cut_end]``."""


@dataclass(frozen=True, slots=True)
class PlannedSegment:
    """A segment to render and the boundary before it (what decides its pause)."""

    segment: Segment
    boundary: Boundary


def plan_segments(
    engine: SpeechEngine,
    text: str,
    *,
    voice: str,
    speed: float,
    fragment_words: int | None,
    previous: str | None,
) -> list[PlannedSegment]:
    """Plan ``text`` (blocking): its segments, the first cut as a first fragment when ``fragment_words`` is set,
    and the boundary before each; ``previous`` is the text the session spoke last (None: nothing heard yet)."""
    pieces = [text]
    if fragment_words is not None:
        fragment, rest = first_fragment(text, words=fragment_words)
        if fragment and rest.strip():
            pieces = [fragment, rest]
    segments: list[Segment] = []
    for piece in pieces:
        segments.extend(engine.plan(piece, voice=voice, speed=speed))
    planned: list[PlannedSegment] = []
    position = 0
    for segment in segments:
        found = text.find(segment.text, position)
        start = found if found >= 0 else position
        boundary = Boundary.START if previous is None else boundary_after(previous, text[position:start])
        planned.append(PlannedSegment(segment=segment, boundary=boundary))
        previous = segment.text
        position = start + len(segment.text) if found >= 0 else position
    return planned


def speak_offline(
    engine: SpeechEngine,
    text: str,
    *,
    voice: str,
    speed: float = 1.0,
    policy: SpeechPolicy | None = None,
    previous: str | None = None,
    first_fragment_words: int | None = None,
) -> bytes:
    """The PCM a fresh session (or one that last spoke ``previous``) gets for ``text`` under ``policy`` (default:
    the server default; ``first_fragment_words`` as a request gives it), computed in this thread without a server:
    the reference for tests and benchmarks."""
    policy = policy if policy is not None else SpeechPolicy()
    streams = bool(getattr(engine, "streams", False))
    words = policy.fragment_words(first_fragment_words, heard=previous is not None, streams=streams)
    plan = plan_segments(engine, text, voice=voice, speed=speed, fragment_words=words, previous=previous)
    heard = previous is not None
    out = bytearray()
    for planned in plan:
        boundary = planned.boundary if heard else Boundary.START
        sent_s = len(out) / (limits.SAMPLE_WIDTH_BYTES * engine.sample_rate)
        tokens = len(planned.segment.tokens)
        if streams and policy.streams_segment(
            session_heard=previous is not None, sent_s=sent_s, tokens=tokens, speed=speed
        ):
            shaper = StreamShaper(boundary=boundary, policy=policy.silence, sample_rate=engine.sample_rate)
            chunks = getattr(engine, "render_stream")(planned.segment, voice=voice, speed=speed).chunks  # noqa: B009
            shaped = [shaper.push(chunk) for chunk in chunks]
            pcm = float_to_pcm16(np.concatenate([*shaped, shaper.finish()]))
        else:
            raw = engine.render(planned.segment, voice=voice, speed=speed)
            pcm = float_to_pcm16(
                shape_segment(raw, boundary=boundary, policy=policy.silence, sample_rate=engine.sample_rate).audio
            )
        heard = heard or bool(pcm)
        out.extend(pcm)
    return bytes(out)


class ScheduledSpeech:
    """Speak ``text`` with ``voice`` at ``speed`` as jobs of ``session``. Drive it from one coroutine at a time.

    ``first_fragment_words`` is the request's own first-fragment choice (0 = off); None takes the server's
    default, which applies while the session has heard nothing yet.
    """

    def __init__(
        self,
        engine: SpeechEngine,
        scheduler: Scheduler,
        session: SchedulerSession,
        *,
        text: str,
        voice: str,
        speed: float,
        first_fragment_words: int | None = None,
    ) -> None:
        self.engine = engine
        self.scheduler = scheduler
        self.session = session
        self.text = text
        self.voice = voice
        self.speed = speed
        self.policy = scheduler.speech
        self.fragment_words = self.policy.fragment_words(
            first_fragment_words, heard=session.heard, streams=bool(getattr(engine, "streams", False))
        )
        self.started = time.perf_counter()
        self.first_audio_s: float | None = None
        self.audio_bytes = 0
        self.segments_done = 0
        self.shaped: list[ShapedInfo] = []
        self._previous = session.last_spoken
        self._planned: list[PlannedSegment] | None = None

    async def plan(self) -> int:
        """Plan the text (raises the engine's errors for a bad voice or speed); returns the segment count."""
        if self._planned is None:
            self._planned = await self.scheduler.plan(self.session, self._plan)
        return len(self._planned)

    def _plan(self) -> list[PlannedSegment]:
        """The plan job, on the planning thread."""
        return plan_segments(
            self.engine,
            self.text,
            voice=self.voice,
            speed=self.speed,
            fragment_words=self.fragment_words,
            previous=self._previous,
        )

    async def pcm_segments(self) -> AsyncGenerator[bytes]:
        """s16le PCM of each segment, in order, each as soon as it is rendered. Plans first if needed."""
        await self.plan()
        assert self._planned is not None
        heard = self._previous is not None
        for index, planned in enumerate(self._planned):
            # a segment's pause follows what was last *heard*: before the first sound there is none
            boundary = planned.boundary if heard else Boundary.START
            cost = len(planned.segment.tokens)
            if self._streams(planned.segment):
                stream = _SegmentStream(self, planned.segment, boundary)
                while not stream.done:
                    pcm = await self.scheduler.run(self.session, index, stream.next_pcm, cost=cost)
                    if pcm:
                        heard = True
                        yield self._heard(pcm)
                self.segments_done += 1
                continue
            job = partial(self._render, planned.segment, boundary)
            pcm = await self.scheduler.run(self.session, index, job, cost=cost)
            self.segments_done += 1
            if not pcm:
                continue
            heard = True
            yield self._heard(pcm)

    def _streams(self, segment: Segment) -> bool:
        """Whether ``segment``, the next one, is decoded chunk by chunk: the choice :func:`speak_offline` makes, from
        the session's state when the request began and the audio this request has sent so far."""
        if not getattr(self.engine, "streams", False):
            return False
        return self.policy.streams_segment(
            session_heard=self._previous is not None,
            sent_s=self.duration_s,
            tokens=len(segment.tokens),
            speed=self.speed,
        )

    def _heard(self, pcm: bytes) -> bytes:
        """Book ``pcm`` as sent: the first audio's time, the session's last spoken text, the byte count."""
        if self.first_audio_s is None:
            self.first_audio_s = time.perf_counter() - self.started
            self.session.last_spoken = self.text
        self.audio_bytes += len(pcm)
        return pcm

    def _render(self, segment: Segment, boundary: Boundary) -> bytes:
        """The job body, on a worker thread: one segment to shaped PCM bytes."""
        raw = self.engine.render(segment, voice=self.voice, speed=self.speed)
        shaped = shape_segment(raw, boundary=boundary, policy=self.policy.silence, sample_rate=self.engine.sample_rate)
        self.shaped.append(
            ShapedInfo(
                segment=segment,
                boundary=boundary,
                raw_samples=len(raw),
                cut_start_samples=shaped.cut_start_samples,
                cut_end_samples=shaped.cut_end_samples,
                pause_samples=shaped.pause_samples,
            )
        )
        return float_to_pcm16(shaped.audio)

    @property
    def elapsed_s(self) -> float:
        return time.perf_counter() - self.started

    @property
    def duration_s(self) -> float:
        return self.audio_bytes / (limits.SAMPLE_WIDTH_BYTES * self.engine.sample_rate)


class _SegmentStream:
    """One segment rendered chunk by chunk: each :meth:`next_pcm` call (a scheduler job, on a worker thread) runs
    the front end first if needed, decodes one chunk and returns its shaped PCM; the last call also records the
    segment's :class:`ShapedInfo`.

    An engine with a ``releasable_raw(shaper)`` method (the word timer's, for requests with timings) may hold audio
    back: after each chunk it says how many of the segment's raw samples may go out (None: all); the rest waits for
    a later chunk, and everything goes out with the last one. The concatenated PCM is the same either way."""

    def __init__(self, speech: ScheduledSpeech, segment: Segment, boundary: Boundary) -> None:
        self._speech = speech
        self._segment = segment
        self._boundary = boundary
        self._chunks: Iterator[npt.NDArray[np.float32]] | None = None
        self._shaper = StreamShaper(
            boundary=boundary, policy=speech.policy.silence, sample_rate=speech.engine.sample_rate
        )
        self._releasable: Callable[[StreamShaper], int | None] | None = getattr(speech.engine, "releasable_raw", None)
        self._held = np.zeros(0, dtype=np.float32)
        """Shaped audio the engine's ``releasable_raw`` holds back."""
        self._released = 0
        """Shaped samples of this segment sent so far."""
        self.done = False

    def next_pcm(self) -> bytes:
        speech = self._speech
        if self._chunks is None:
            render_stream = getattr(speech.engine, "render_stream")  # noqa: B009 - checked by ScheduledSpeech._streams
            self._chunks = render_stream(self._segment, voice=speech.voice, speed=speech.speed).chunks
        chunk = next(self._chunks, None)
        if chunk is not None:
            return float_to_pcm16(self._release(self._shaper.push(chunk)))
        tail = np.concatenate((self._held, self._shaper.finish()))
        self._held = np.zeros(0, dtype=np.float32)
        result = self._shaper.result
        assert result is not None
        speech.shaped.append(
            ShapedInfo(
                segment=self._segment,
                boundary=self._boundary,
                raw_samples=self._shaper.raw_samples,
                cut_start_samples=result.cut_start_samples,
                cut_end_samples=result.cut_end_samples,
                pause_samples=result.pause_samples,
            )
        )
        self.done = True
        return float_to_pcm16(tail)

    def _release(self, shaped: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """The part of the held and newly shaped audio that may go out now (all of it without a limit)."""
        if self._releasable is None:
            return shaped
        held = np.concatenate((self._held, shaped))
        limit = self._releasable(self._shaper)
        cut_start = self._shaper.cut_start_samples
        if limit is None:
            allowed = len(held)
        elif cut_start is None:
            allowed = 0
        else:
            # shaped sample k of the segment is its pause, then raw sample cut_start + (k - pause)
            allowed = min(len(held), self._shaper.pause_samples + max(0, limit - cut_start) - self._released)
        allowed = max(0, allowed)
        self._held = held[allowed:]
        self._released += allowed
        return held[:allowed]
