"""Word timings for one request, on every route, without changing how the request is synthesized.

A route that was asked for timings (``"timings": true``) wraps the engine in a :class:`WordTimer` for that request
and hands ``timer.engine`` to :class:`~kokoro_server.scheduled_speech.ScheduledSpeech` in place of the engine. The
wrapper renders each segment with its token durations (same forward pass, same audio) and keeps the result.
Whenever audio comes out of ``ScheduledSpeech.pcm_segments()`` (or out of a route's encoder),
:meth:`WordTimer.pending` turns the segments rendered since into ``word_timings`` messages, on the request's audio
timeline *after* the silence policy (each segment's offset in the request, the samples the policy cut and the pause
it put in front, all from ``ScheduledSpeech.shaped``). The route sends those messages before that audio.

With the streaming decoder on (``KOKORO_STREAM_DECODER``, an engine that streams), the wrapper streams too: each
segment's chunks feed a :class:`~kokoro_server.word_clock.SegmentWordClock`, and ``ScheduledSpeech`` asks
:meth:`_RecordingEngine.releasable_raw` after every chunk how far the segment's audio may go out. A word is
*sendable* once its fitted span is final and its place on the timeline is (the silence policy's start cut known,
its end inside the audio the policy keeps whatever comes next); audio goes out only up to the end of the last
sendable word, so every ``word_timings`` message still comes before the audio of the words it carries, and a
segment's words may come in several messages, one before each piece of its audio. The times are the ones the
whole-segment computation gives on the same audio, exactly.

An engine without durations (a test double, or an ONNX export without a duration tensor) gives no timings: the
request is still spoken, and :meth:`WordTimer.pending` returns nothing.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from kokoro_server.engines import Rendered, Segment
from kokoro_server.engines.base import StreamedRender
from kokoro_server.engines.speech_engine import SpeechEngine
from kokoro_server.word_clock import SegmentWordClock
from kokoro_server.word_timings import SegmentPlacement, TimedSpeechEngine, place_on_timeline, segment_word_timings
from relay_core.word_timings import WordTimings


class ShapedSegment(Protocol):
    """What the silence policy did to a segment (``ScheduledSpeech.shaped`` entries have these fields)."""

    @property
    def cut_start_samples(self) -> int: ...

    @property
    def cut_end_samples(self) -> int: ...

    @property
    def pause_samples(self) -> int: ...


class SynthesisProgress(Protocol):
    """What :meth:`WordTimer.pending` reads from a running ``ScheduledSpeech``."""

    @property
    def shaped(self) -> Sequence[ShapedSegment]: ...


class ShaperView(Protocol):
    """What :meth:`_RecordingEngine.releasable_raw` reads from a segment's ``StreamShaper``."""

    @property
    def cut_start_samples(self) -> int | None: ...

    @property
    def pause_samples(self) -> int: ...

    @property
    def kept_at_least(self) -> int: ...


@dataclass
class _StreamedSegment:
    """A segment rendered chunk by chunk: its word clock, and where the silence policy has it so far."""

    segment: Segment
    clock: SegmentWordClock
    sendable: int = 0
    """Words whose timing is final and placed (a prefix)."""
    sent: int = 0
    """Words already handed out by :meth:`WordTimer.pending`."""
    cut_start: int | None = None
    pause: int = 0


class _RecordingEngine:
    """A :class:`SpeechEngine` that renders with durations and keeps each segment's result until it is timed.

    One request renders one segment at a time (the scheduler runs one job per session), in order."""

    def __init__(self, inner: SpeechEngine, timed: TimedSpeechEngine) -> None:
        self._inner = inner
        self._timed = timed
        self.name = inner.name
        self.sample_rate = inner.sample_rate
        self.default_voice = inner.default_voice
        self.rendered: deque[tuple[Segment, Rendered] | _StreamedSegment] = deque()

    @property
    def streams(self) -> bool:
        """Whether the wrapped engine streams (then :meth:`render_stream` does too)."""
        return bool(getattr(self._inner, "streams", False))

    def voices(self) -> list[str]:
        return self._inner.voices()

    def check_voice(self, spec: str) -> None:
        self._inner.check_voice(spec)

    def plan(self, text: str, *, voice: str, speed: float) -> list[Segment]:
        return self._inner.plan(text, voice=voice, speed=speed)

    def render(self, segment: Segment, *, voice: str, speed: float) -> npt.NDArray[np.float32]:
        rendered = self._timed.render_timed(segment, voice=voice, speed=speed)
        self.rendered.append((segment, rendered))
        return rendered.audio

    def render_stream(self, segment: Segment, *, voice: str, speed: float) -> StreamedRender:
        """The wrapped engine's stream, each chunk fed to the segment's word clock as it is read."""
        render_stream = getattr(self._inner, "render_stream")  # noqa: B009 - only called when streams is true
        streamed: StreamedRender = render_stream(segment, voice=voice, speed=speed)
        clock = SegmentWordClock(
            self._timed.phonemize_word,
            segment,
            streamed.durations,
            frame_samples=streamed.frame_samples,
            sample_rate=self.sample_rate,
        )
        self.rendered.append(_StreamedSegment(segment=segment, clock=clock))
        return StreamedRender(
            durations=streamed.durations, chunks=_fed(clock, streamed.chunks), frame_samples=streamed.frame_samples
        )

    def releasable_raw(self, shaper: ShaperView) -> int | None:
        """How many raw samples of the segment streaming now may go out (None: all of them), given its shaper
        after the latest chunk: up to the end of the last word whose timing is final and placed."""
        current = self.rendered[-1] if self.rendered else None
        if not isinstance(current, _StreamedSegment) or not current.clock.words or not current.clock.predicted:
            return None
        current.cut_start = shaper.cut_start_samples
        current.pause = shaper.pause_samples
        spans = current.clock.final_spans()
        if current.cut_start is None:
            return 0
        limit = min(current.clock.raw_samples, shaper.kept_at_least)
        sendable = 0
        while sendable < len(spans) and spans[sendable][1] <= limit:
            sendable += 1
        current.sendable = max(current.sendable, sendable)
        if current.sendable == len(current.clock.words):
            return None
        return spans[current.sendable - 1][1] if current.sendable else 0


def _fed(clock: SegmentWordClock, chunks: Iterator[npt.NDArray[np.float32]]) -> Iterator[npt.NDArray[np.float32]]:
    for chunk in chunks:
        clock.feed(chunk)
        yield chunk
    clock.finish()


class WordTimer:
    """Word timings of one request's segments (see the module doc). Use one per request."""

    def __init__(self, engine: SpeechEngine, *, request_id: str) -> None:
        self.request_id = request_id
        self._timed = engine if isinstance(engine, TimedSpeechEngine) else None
        self._recorder = None if self._timed is None else _RecordingEngine(engine, self._timed)
        self.engine: SpeechEngine = engine if self._recorder is None else self._recorder
        """The engine to synthesize the request with."""
        self._timed_segments = 0
        self._offset_samples = 0

    def pending(self, synthesis: SynthesisProgress) -> list[WordTimings]:
        """The timings of every word rendered (and shaped) since the last call, in order; send them before the
        audio yielded since. Segments are placed one after another on the request's timeline, each taking its
        pause plus its kept samples (an empty segment takes none). A whole segment gives one message; a streamed
        one gives its sendable words as they become so, the rest once it is shaped."""
        recorder, timed = self._recorder, self._timed
        if recorder is None or timed is None:
            return []
        timings: list[WordTimings] = []
        while recorder.rendered:
            record = recorder.rendered[0]
            finished = self._timed_segments < len(synthesis.shaped)
            if isinstance(record, _StreamedSegment):
                placed = self._streamed_words(record, synthesis.shaped[self._timed_segments] if finished else None)
                if placed is not None:
                    timings.append(placed)
                if not finished:
                    break
                recorder.rendered.popleft()
                self._finish_segment(record.clock.raw_samples, synthesis.shaped[self._timed_segments])
                continue
            if not finished:
                break
            segment, rendered = record
            recorder.rendered.popleft()
            shaped = synthesis.shaped[self._timed_segments]
            placement = self._placement(shaped, len(rendered.audio))
            self._finish_segment(len(rendered.audio), shaped)
            if placement.kept_samples:
                whole = segment_word_timings(
                    timed, segment, rendered, placement, request_id=self.request_id, sample_rate=self.engine.sample_rate
                )
                if whole is not None:
                    timings.append(whole)
        return timings

    def _placement(self, shaped: ShapedSegment, raw_samples: int) -> SegmentPlacement:
        return SegmentPlacement(
            offset_samples=self._offset_samples,
            cut_start_samples=shaped.cut_start_samples,
            pause_samples=shaped.pause_samples,
            kept_samples=max(0, raw_samples - shaped.cut_start_samples - shaped.cut_end_samples),
        )

    def _finish_segment(self, raw_samples: int, shaped: ShapedSegment) -> None:
        kept = max(0, raw_samples - shaped.cut_start_samples - shaped.cut_end_samples)
        self._timed_segments += 1
        self._offset_samples += shaped.pause_samples + kept

    def _streamed_words(self, record: _StreamedSegment, shaped: ShapedSegment | None) -> WordTimings | None:
        """The words of a streamed segment not handed out yet that can be placed now (all of them once ``shaped``,
        its final shaping, is known; before, the sendable ones, whose end is inside the audio kept anyway)."""
        clock = record.clock
        if shaped is not None:
            placement = self._placement(shaped, clock.raw_samples)
            if not placement.kept_samples:
                return None
            end = len(clock.words)
        else:
            if record.cut_start is None or record.sendable <= record.sent:
                return None
            placement = SegmentPlacement(
                offset_samples=self._offset_samples, cut_start_samples=record.cut_start, pause_samples=record.pause
            )
            end = record.sendable
        if end <= record.sent:
            return None
        spans = clock.final_spans()[:end]
        placed = place_on_timeline(clock.words[:end], spans, placement, sample_rate=self.engine.sample_rate)
        words = tuple(placed[record.sent :])
        record.sent = end
        return WordTimings(self.request_id, words)
