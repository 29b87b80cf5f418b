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
  over as it exists; between chunks, other sessions' jobs run by the scheduler's priority. The choice depends on
  the request's plan and audio only, never on time or load;
- :meth:`ScheduledSpeech.events` yields what happened, in order, as typed events: :class:`SpeechAudio` (PCM as soon
  as it exists), :class:`SpeechTimings` (a request with a :class:`~kokoro_server.word_timer.WordTimer`: the
  ``word_timings`` to send before the audio that follows them; the timer observes the rendering and never holds
  audio back) and :class:`SegmentShaped` (what the silence policy did to a segment, once it is complete). A route
  only encodes these events.

Identical input (text, voice, speed, policy, and what the session said before) gives identical PCM, with or
without word timings.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass, field
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
from kokoro_server.word_timer import WordTimer
from relay_core.audio import pcm_duration_s
from relay_core.languages import Language
from relay_core.speech_options import DEFAULT_SPEECH, SpeechOptions
from relay_core.text.segmenter import first_fragment
from relay_core.word_timings import WordTimings


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
class SpeechAudio:
    """Shaped PCM (s16le) of the request, the next piece of its audio timeline."""

    pcm: bytes


@dataclass(frozen=True, slots=True)
class SpeechTimings:
    """A ``word_timings`` message of the request: send it before the audio that follows it."""

    timings: WordTimings


@dataclass(frozen=True, slots=True)
class SegmentShaped:
    """A segment is complete (all its audio was yielded): what the silence policy did to it."""

    info: ShapedInfo


SpeechEvent = SpeechAudio | SpeechTimings | SegmentShaped
"""What :meth:`ScheduledSpeech.events` yields, in order."""


@dataclass(slots=True)
class _Piece:
    """What one scheduler job hands back: the timings to send first, the PCM, and the segment's shaping when the
    job completed it."""

    pcm: bytes
    timings: list[WordTimings] = field(default_factory=list)
    shaped: ShapedInfo | None = None

    def events(self) -> Iterator[SpeechEvent]:
        for message in self.timings:
            yield SpeechTimings(message)
        if self.pcm:
            yield SpeechAudio(self.pcm)
        if self.shaped is not None:
            yield SegmentShaped(self.shaped)


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
    lang: Language | None = None,
) -> list[PlannedSegment]:
    """Plan ``text`` (blocking) in ``lang`` (None: the voice's language): its segments, the first cut as a first
    fragment when ``fragment_words`` is set, and the boundary before each; ``previous`` is the text the session
    spoke last (None: nothing heard yet)."""
    pieces = [text]
    if fragment_words is not None:
        fragment, rest = first_fragment(text, words=fragment_words)
        if fragment and rest.strip():
            pieces = [fragment, rest]
    segments: list[Segment] = []
    for piece in pieces:
        segments.extend(engine.plan(piece, voice=voice, speed=speed, lang=lang))
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
    options: SpeechOptions = DEFAULT_SPEECH,
    policy: SpeechPolicy | None = None,
    previous: str | None = None,
    first_fragment_words: int | None = None,
) -> bytes:
    """The PCM a fresh session (or one that last spoke ``previous``) gets for ``text`` under ``policy`` (default:
    the server default; ``first_fragment_words`` and ``options`` as a request gives them, voice None meaning the
    engine's default), computed in this thread without a server: the reference for tests and benchmarks."""
    policy = policy if policy is not None else SpeechPolicy()
    voice, speed = options.voice or engine.default_voice, options.speed
    words = policy.fragment_words(first_fragment_words, heard=previous is not None, streams=engine.streams)
    plan = plan_segments(
        engine, text, voice=voice, speed=speed, fragment_words=words, previous=previous, lang=options.language
    )
    heard = previous is not None
    out = bytearray()
    for planned in plan:
        boundary = planned.boundary if heard else Boundary.START
        sent_s = pcm_duration_s(len(out), sample_rate=engine.sample_rate)
        tokens = len(planned.segment.tokens)
        if engine.streams and policy.streams_segment(
            session_heard=previous is not None, sent_s=sent_s, tokens=tokens, speed=speed
        ):
            shaper = StreamShaper(boundary=boundary, policy=policy.silence, sample_rate=engine.sample_rate)
            chunks = engine.render_stream(planned.segment, voice=voice, speed=speed).chunks
            shaped = [shaper.push(chunk) for chunk in chunks]
            pcm = float_to_pcm16(np.concatenate([*shaped, shaper.finish()]))
        else:
            raw = engine.render_timed(planned.segment, voice=voice, speed=speed).audio
            pcm = float_to_pcm16(
                shape_segment(raw, boundary=boundary, policy=policy.silence, sample_rate=engine.sample_rate).audio
            )
        heard = heard or bool(pcm)
        out.extend(pcm)
    return bytes(out)


class ScheduledSpeech:
    """Speak ``text`` as ``options`` say (voice None: the engine's default) as jobs of ``session``. Drive it from one
    coroutine at a time.

    ``first_fragment_words`` is the request's own first-fragment choice (0 = off); None takes the server's
    default, which applies while the session has heard nothing yet. ``timer``: the request's word timer (a request
    that asked for timings), told what each job rendered; its messages come out as :class:`SpeechTimings` events.
    """

    def __init__(
        self,
        engine: SpeechEngine,
        scheduler: Scheduler,
        session: SchedulerSession,
        *,
        text: str,
        options: SpeechOptions = DEFAULT_SPEECH,
        first_fragment_words: int | None = None,
        timer: WordTimer | None = None,
    ) -> None:
        self.engine = engine
        self.scheduler = scheduler
        self.session = session
        self.text = text
        self.options = options
        self.voice = options.voice or engine.default_voice
        """The voice spoken: the request's, or the engine's default."""
        self.speed = options.speed
        self.timer = timer
        self.policy = scheduler.speech
        self.fragment_words = self.policy.fragment_words(
            first_fragment_words, heard=session.heard, streams=engine.streams
        )
        self.started = time.perf_counter()
        self.first_audio_s: float | None = None
        self.audio_bytes = 0
        self.segments_done = 0
        self.shaped: list[ShapedInfo] = []
        self._previous = session.last_spoken
        self._planned: list[PlannedSegment] | None = None
        self._held_timings: list[WordTimings] = []

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
            lang=self.options.language,
        )

    async def events(self) -> AsyncGenerator[SpeechEvent]:
        """The request's events in order (see the module doc), each as soon as it exists. Plans first if needed."""
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
                    piece = await self.scheduler.run(self.session, index, stream.next_piece, cost=cost)
                    heard = heard or bool(piece.pcm)
                    for event in self._booked(piece):
                        yield event
                self.segments_done += 1
                continue
            job = partial(self._render, planned.segment, boundary)
            piece = await self.scheduler.run(self.session, index, job, cost=cost)
            self.segments_done += 1
            heard = heard or bool(piece.pcm)
            for event in self._booked(piece):
                yield event

    async def pcm_segments(self) -> AsyncGenerator[bytes]:
        """Only the audio of :meth:`events`: s16le PCM, in order, each piece as soon as it is rendered."""
        async for event in self.events():
            if isinstance(event, SpeechAudio):
                yield event.pcm

    def _streams(self, segment: Segment) -> bool:
        """Whether ``segment``, the next one, is decoded chunk by chunk: the choice :func:`speak_offline` makes, from
        the session's state when the request began and the audio this request has sent so far."""
        if not self.engine.streams:
            return False
        return self.policy.streams_segment(
            session_heard=self._previous is not None,
            sent_s=self.duration_s,
            tokens=len(segment.tokens),
            speed=self.speed,
        )

    def _booked(self, piece: _Piece) -> Iterator[SpeechEvent]:
        """The piece's events, its PCM booked as sent: the first audio's time, the session's last spoken text,
        the byte count; its shaping recorded."""
        if piece.pcm:
            if self.first_audio_s is None:
                self.first_audio_s = time.perf_counter() - self.started
                self.session.last_spoken = self.text
            self.audio_bytes += len(piece.pcm)
        if piece.shaped is not None:
            self.shaped.append(piece.shaped)
        piece.timings[:0], self._held_timings = self._held_timings, []
        if not piece.pcm and piece.shaped is None:
            # a chunk whose audio the silence policy still holds: its timings go right before the next audio
            self._held_timings, piece.timings = piece.timings, []
        return piece.events()

    def _render(self, segment: Segment, boundary: Boundary) -> _Piece:
        """The job body, on a worker thread: one segment to shaped PCM bytes (and its timings)."""
        rendered = self.engine.render_timed(segment, voice=self.voice, speed=self.speed)
        raw = rendered.audio
        shaped = shape_segment(raw, boundary=boundary, policy=self.policy.silence, sample_rate=self.engine.sample_rate)
        info = ShapedInfo(
            segment=segment,
            boundary=boundary,
            raw_samples=len(raw),
            cut_start_samples=shaped.cut_start_samples,
            cut_end_samples=shaped.cut_end_samples,
            pause_samples=shaped.pause_samples,
        )
        timings = [] if self.timer is None else self.timer.whole_segment(segment, rendered, info)
        return _Piece(pcm=float_to_pcm16(shaped.audio), timings=timings, shaped=info)

    @property
    def elapsed_s(self) -> float:
        return time.perf_counter() - self.started

    @property
    def duration_s(self) -> float:
        return pcm_duration_s(self.audio_bytes, sample_rate=self.engine.sample_rate)


class _SegmentStream:
    """One segment rendered chunk by chunk: each :meth:`next_piece` call (a scheduler job, on a worker thread) runs
    the front end first if needed, decodes one chunk and returns its shaped PCM, with the timings the request's
    word timer has for it; the last call also carries the segment's :class:`ShapedInfo`. No audio is held back."""

    def __init__(self, speech: ScheduledSpeech, segment: Segment, boundary: Boundary) -> None:
        self._speech = speech
        self._segment = segment
        self._boundary = boundary
        self._chunks: Iterator[npt.NDArray[np.float32]] | None = None
        self._shaper = StreamShaper(
            boundary=boundary, policy=speech.policy.silence, sample_rate=speech.engine.sample_rate
        )
        self.done = False

    def next_piece(self) -> _Piece:
        speech, timer = self._speech, self._speech.timer
        if self._chunks is None:
            streamed = speech.engine.render_stream(self._segment, voice=speech.voice, speed=speech.speed)
            if timer is not None:
                timer.stream_started(self._segment, streamed)
            self._chunks = streamed.chunks
        chunk = next(self._chunks, None)
        if chunk is not None:
            shaped = self._shaper.push(chunk)
            timings = [] if timer is None else timer.chunk(chunk, self._shaper)
            return _Piece(pcm=float_to_pcm16(shaped), timings=timings)
        tail = self._shaper.finish()
        result = self._shaper.result
        assert result is not None
        info = ShapedInfo(
            segment=self._segment,
            boundary=self._boundary,
            raw_samples=self._shaper.raw_samples,
            cut_start_samples=result.cut_start_samples,
            cut_end_samples=result.cut_end_samples,
            pause_samples=result.pause_samples,
        )
        self.done = True
        timings = [] if timer is None else timer.stream_finished(info)
        return _Piece(pcm=float_to_pcm16(tail), timings=timings, shaped=info)
