"""Word timings for one request: an observer of its synthesis that never holds its audio back.

A route asked for timings (``"timings": true``) gives :class:`~kokoro_server.scheduled_speech.ScheduledSpeech` a
:class:`WordTimer`. The scheduled speech renders every segment with its token durations (the same forward pass and
the same audio as without timings) and tells the timer what happened, on the worker thread that did it; the timer
answers with the ``word_timings`` messages to send *before* that audio, on the request's audio timeline after the
silence policy (each segment's offset in the request, the samples the policy cut and the pause it put in front).

- A segment decoded whole (:meth:`WordTimer.whole_segment`): one message with every word, final.
- A segment decoded chunk by chunk (the streaming decoder): every word's place is known from the durations after
  the front end, before its audio is decoded, but its fitted span is *final* only once the audio around it has
  been decoded (:class:`~kokoro_server.word_clock.SegmentWordClock`). So with the segment's first audio
  (:meth:`WordTimer.chunk`, as soon as the silence policy knows where the segment's kept audio starts) every word
  of the segment goes out: the final ones, and the others as estimates with ``final`` false. Each later chunk that
  makes more words final sends them again from the first word not yet final, with ``index`` (their position among
  the request's words) so that they replace what was sent (:func:`relay_core.word_timings.apply_word_timings`);
  the last chunk (:meth:`WordTimer.stream_finished`) makes every word final.

Guarantees: audio is never held for a timing (the request's PCM, frame by frame, is what it is without timings);
every word's timing goes out before the first audio of its segment; a word sent final has exactly the span the
whole-segment computation gives on the same audio (a word counts as final once its fitted span cannot change and
its end lies inside the audio the policy keeps whatever comes next); after the request, applying its messages in
order gives every word once, final.

An engine without durations (an ONNX export without a duration tensor, a test double) gives no timings: the
request is still spoken, and the timer sends nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Protocol

import numpy as np
import numpy.typing as npt

from kokoro_server.engines import Rendered, Segment
from kokoro_server.engines.base import StreamedRender
from kokoro_server.engines.speech_engine import SpeechEngine
from kokoro_server.word_clock import SegmentWordClock
from kokoro_server.word_timings import SegmentPlacement, place_on_timeline, segment_word_timings
from relay_core.word_timings import WordTiming, WordTimings


class ShapedSegment(Protocol):
    """What the silence policy did to a whole segment (``ScheduledSpeech``'s ``ShapedInfo`` has these fields)."""

    @property
    def cut_start_samples(self) -> int: ...

    @property
    def cut_end_samples(self) -> int: ...

    @property
    def pause_samples(self) -> int: ...


class ShaperView(Protocol):
    """What :meth:`WordTimer.chunk` reads from a segment's ``StreamShaper`` after a chunk was pushed."""

    @property
    def cut_start_samples(self) -> int | None: ...

    @property
    def pause_samples(self) -> int: ...

    @property
    def kept_at_least(self) -> int: ...


@dataclass
class _StreamedSegment:
    """A segment rendered chunk by chunk: its word clock and what of its words has gone out."""

    clock: SegmentWordClock
    first_word: int
    """Position of the segment's first word among the request's words."""
    sent_final: int = 0
    """Leading words already sent final."""
    estimates_out: bool = False
    """Words sent as estimates that a later message must replace."""


class WordTimer:
    """Word timings of one request's segments (see the module doc). One per request; the scheduled speech calls it
    from one worker thread at a time, segment after segment, in order."""

    def __init__(self, engine: SpeechEngine, *, request_id: str) -> None:
        self.request_id = request_id
        self._engine = engine
        self._offset_samples = 0
        """Where the next segment's audio starts on the request's timeline."""
        self._words = 0
        """Words of the request sent (final) in the segments before the current one."""
        self._streamed: _StreamedSegment | None = None

    def whole_segment(self, segment: Segment, rendered: Rendered, shaped: ShapedSegment) -> list[WordTimings]:
        """A segment decoded whole and shaped: its one message (none without durations, words or kept audio)."""
        placement = self._placement(shaped, len(rendered.audio))
        self._advance(shaped, placement.kept_samples or 0)
        if not placement.kept_samples:
            return []
        whole = segment_word_timings(
            self._engine,
            segment,
            rendered,
            placement,
            request_id=self.request_id,
            sample_rate=self._engine.sample_rate,
        )
        if whole is None:
            return []
        self._words += len(whole.words)
        return [whole]

    def stream_started(self, segment: Segment, streamed: StreamedRender) -> None:
        """A segment's front end ran: its words and their predicted spans are known."""
        clock = SegmentWordClock(
            partial(self._engine.phonemize_word, language=segment.language),
            segment,
            streamed.durations,
            frame_samples=streamed.frame_samples,
            sample_rate=self._engine.sample_rate,
        )
        self._streamed = _StreamedSegment(clock=clock, first_word=self._words)

    def chunk(self, raw: npt.NDArray[np.float32], shaper: ShaperView) -> list[WordTimings]:
        """The segment's next raw chunk, already pushed through ``shaper``: the message to send before the audio
        the shaper gave for it (none when nothing changed or nothing of the segment is audible yet)."""
        current = self._streamed
        if current is None:
            raise RuntimeError("WordTimer.chunk before stream_started: start the segment's stream first")
        clock = current.clock
        clock.feed(raw)
        cut_start = shaper.cut_start_samples
        if not clock.words or cut_start is None:
            return []
        spans, final = clock.best_spans()
        limit = min(clock.raw_samples, shaper.kept_at_least)
        final = next((index for index in range(final) if spans[index][1] > limit), final)
        if current.estimates_out and final <= current.sent_final:
            return []
        placement = SegmentPlacement(
            offset_samples=self._offset_samples, cut_start_samples=cut_start, pause_samples=shaper.pause_samples
        )
        return self._send(current, spans, placement, final=final)

    def stream_finished(self, shaped: ShapedSegment) -> list[WordTimings]:
        """The segment's last chunk was shaped (``shaped``: what the policy did to all of it): its words not sent
        final yet, final."""
        current = self._streamed
        if current is None:
            raise RuntimeError("WordTimer.stream_finished before stream_started: start the segment's stream first")
        self._streamed = None
        clock = current.clock
        clock.finish()
        placement = self._placement(shaped, clock.raw_samples)
        self._advance(shaped, placement.kept_samples or 0)
        if not clock.words or not placement.kept_samples:
            return []
        spans = clock.final_spans()
        messages = self._send(current, spans, placement, final=len(spans))
        self._words = current.first_word + len(clock.words)
        return messages

    def _send(
        self, current: _StreamedSegment, spans: list[tuple[int, int]], placement: SegmentPlacement, *, final: int
    ) -> list[WordTimings]:
        """Words ``sent_final..`` of the segment placed on the timeline, the first ``final`` of them final."""
        words = current.clock.words
        start = current.sent_final
        placed = place_on_timeline(words[start:], spans[start:], placement, sample_rate=self._engine.sample_rate)
        timed = tuple(
            word if start + offset < final else WordTiming(word.word, word.start_s, word.end_s, final=False)
            for offset, word in enumerate(placed)
        )
        index = current.first_word + start if current.estimates_out else None
        current.sent_final = final
        current.estimates_out = final < len(words)
        return [WordTimings(self.request_id, timed, index=index)] if timed else []

    def _placement(self, shaped: ShapedSegment, raw_samples: int) -> SegmentPlacement:
        return SegmentPlacement(
            offset_samples=self._offset_samples,
            cut_start_samples=shaped.cut_start_samples,
            pause_samples=shaped.pause_samples,
            kept_samples=max(0, raw_samples - shaped.cut_start_samples - shaped.cut_end_samples),
        )

    def _advance(self, shaped: ShapedSegment, kept_samples: int) -> None:
        self._offset_samples += shaped.pause_samples + kept_samples
