"""Word timings for one request, on every route, without changing how the request is synthesized.

A route that was asked for timings (``"timings": true``) wraps the engine in a :class:`WordTimer` for that request
and hands ``timer.engine`` to :class:`~kokoro_server.scheduled_speech.ScheduledSpeech` in place of the engine. The
wrapper renders each segment with its token durations (same forward pass, same audio) and keeps the result.
Whenever audio comes out of ``ScheduledSpeech.pcm_segments()`` (or out of a route's encoder),
:meth:`WordTimer.pending` turns the segments rendered since into ``word_timings`` messages, on the request's audio
timeline *after* the silence policy (each segment's offset in the request, the samples the policy cut and the pause
it put in front, all from ``ScheduledSpeech.shaped``). The route sends those messages before that audio.

An engine without durations (a test double, or an ONNX export without a duration tensor) gives no timings: the
request is still spoken, and :meth:`WordTimer.pending` returns nothing.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from kokoro_server.engines import Rendered, Segment
from kokoro_server.engines.speech_engine import SpeechEngine
from kokoro_server.word_timings import SegmentPlacement, TimedSpeechEngine, segment_word_timings
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


class _RecordingEngine:
    """A :class:`SpeechEngine` that renders with durations and keeps each segment's result until it is timed.

    One request renders one segment at a time (the scheduler runs one job per session), in order."""

    def __init__(self, inner: SpeechEngine, timed: TimedSpeechEngine) -> None:
        self._inner = inner
        self._timed = timed
        self.name = inner.name
        self.sample_rate = inner.sample_rate
        self.default_voice = inner.default_voice
        self.rendered: deque[tuple[Segment, Rendered]] = deque()

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
        """The timings of every segment rendered (and shaped) since the last call, in order; send them before the
        audio those segments yielded. Segments are placed one after another on the request's timeline, each taking
        its pause plus its kept samples (an empty segment takes none)."""
        recorder, timed = self._recorder, self._timed
        if recorder is None or timed is None:
            return []
        timings: list[WordTimings] = []
        while recorder.rendered and self._timed_segments < len(synthesis.shaped):
            segment, rendered = recorder.rendered.popleft()
            shaped = synthesis.shaped[self._timed_segments]
            self._timed_segments += 1
            kept = max(0, len(rendered.audio) - shaped.cut_start_samples - shaped.cut_end_samples)
            placement = SegmentPlacement(
                offset_samples=self._offset_samples,
                cut_start_samples=shaped.cut_start_samples,
                pause_samples=shaped.pause_samples,
                kept_samples=kept,
            )
            self._offset_samples += shaped.pause_samples + kept
            if kept:
                placed = segment_word_timings(
                    timed, segment, rendered, placement, request_id=self.request_id, sample_rate=self.engine.sample_rate
                )
                if placed is not None:
                    timings.append(placed)
        return timings
