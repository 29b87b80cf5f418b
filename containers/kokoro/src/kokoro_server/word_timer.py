"""Word timings for one request, on every route, without changing how the request is synthesized.

A route that was asked for timings (``"timings": true``) wraps the engine in a :class:`WordTimer` for that request
and hands ``timer.engine`` to :class:`~kokoro_server.synthesis.Synthesis` in place of the engine. The wrapper
renders each segment with its token durations (same forward pass, same audio) and keeps the latest result; after
each segment's PCM comes out of ``Synthesis.pcm_segments()``, :meth:`WordTimer.after_segment` turns it into the
``word_timings`` message for that segment, on the request's audio timeline *after* the silence policy (the
segment's offset in the request, and the samples the policy cut and the pause it put in front, from
``Synthesis.shaped``). The route sends that message before the segment's audio.

An engine without durations (a test double, or an ONNX export without a duration tensor) gives no timings: the
request is still spoken, and :meth:`WordTimer.after_segment` returns None.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from kokoro_server.engines import Rendered, Segment
from kokoro_server.speech import SpeechEngine
from kokoro_server.word_timings import SegmentPlacement, TimedSpeechEngine, segment_word_timings
from relay_core import limits
from relay_core.word_timings import WordTimings


class ShapedSegment(Protocol):
    """What the silence policy did to a segment (``Synthesis.shaped`` entries have these fields)."""

    @property
    def cut_start_samples(self) -> int: ...

    @property
    def cut_end_samples(self) -> int: ...

    @property
    def pause_samples(self) -> int: ...


class SynthesisProgress(Protocol):
    """What :meth:`WordTimer.after_segment` reads from a running ``Synthesis``."""

    @property
    def audio_bytes(self) -> int: ...

    @property
    def shaped(self) -> Sequence[ShapedSegment]: ...


class _RecordingEngine:
    """A :class:`SpeechEngine` that renders with durations and remembers the latest segment rendered.

    One request renders one segment at a time (the scheduler runs one job per session), so "latest" is the
    segment whose PCM the request yields next."""

    def __init__(self, inner: SpeechEngine, timed: TimedSpeechEngine) -> None:
        self._inner = inner
        self._timed = timed
        self.name = inner.name
        self.sample_rate = inner.sample_rate
        self.default_voice = inner.default_voice
        self.latest: tuple[Segment, Rendered] | None = None

    def voices(self) -> list[str]:
        return self._inner.voices()

    def check_voice(self, spec: str) -> None:
        self._inner.check_voice(spec)

    def plan(self, text: str, *, voice: str, speed: float) -> list[Segment]:
        return self._inner.plan(text, voice=voice, speed=speed)

    def render(self, segment: Segment, *, voice: str, speed: float) -> npt.NDArray[np.float32]:
        rendered = self._timed.render_timed(segment, voice=voice, speed=speed)
        self.latest = (segment, rendered)
        return rendered.audio


class WordTimer:
    """Word timings of one request's segments (see the module doc). Use one per request."""

    def __init__(self, engine: SpeechEngine, *, request_id: str) -> None:
        self.request_id = request_id
        self._timed = engine if isinstance(engine, TimedSpeechEngine) else None
        self._recorder = None if self._timed is None else _RecordingEngine(engine, self._timed)
        self.engine: SpeechEngine = engine if self._recorder is None else self._recorder
        """The engine to synthesize the request with."""

    def after_segment(self, synthesis: SynthesisProgress, pcm: bytes) -> WordTimings | None:
        """The timings of the segment whose ``pcm`` the synthesis has just yielded (None without durations)."""
        if self._recorder is None or self._timed is None or self._recorder.latest is None or not synthesis.shaped:
            return None
        segment, rendered = self._recorder.latest
        self._recorder.latest = None
        shaped = synthesis.shaped[-1]
        placement = SegmentPlacement(
            offset_samples=(synthesis.audio_bytes - len(pcm)) // limits.SAMPLE_WIDTH_BYTES,
            cut_start_samples=shaped.cut_start_samples,
            pause_samples=shaped.pause_samples,
            kept_samples=max(0, len(rendered.audio) - shaped.cut_start_samples - shaped.cut_end_samples),
        )
        return segment_word_timings(
            self._timed,
            segment,
            rendered,
            placement,
            request_id=self.request_id,
            sample_rate=self.engine.sample_rate,
        )
