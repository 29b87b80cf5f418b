"""WordTimer: an observer of a request's synthesis that places each segment's word timings after the silence edit."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from kokoro_server.engines import Engine, Rendered, Segment
from kokoro_server.engines.base import StreamedRender
from kokoro_server.silence import Boundary, SilencePolicy
from kokoro_server.stream_shaper import StreamShaper
from kokoro_server.word_timer import WordTimer
from relay_core.word_timings import WordTiming, apply_word_timings

VOICE = "jf_alpha"


@dataclass(frozen=True)
class Shaped:
    cut_start_samples: int
    cut_end_samples: int
    pause_samples: int


def test_a_render_without_durations_gives_no_timings(onnx_engine: Engine) -> None:
    timer = WordTimer(onnx_engine, request_id="r")
    segment = Segment(text="hi", phonemes="a", tokens=(1,))
    rendered = Rendered(audio=np.full(600, 0.5, dtype=np.float32), durations=None)
    assert timer.whole_segment(segment, rendered, Shaped(0, 0, 0)) == []


def test_chunk_and_finish_need_a_started_stream(onnx_engine: Engine) -> None:
    timer = WordTimer(onnx_engine, request_id="r")
    shaper = StreamShaper(boundary=Boundary.START, policy=SilencePolicy())
    with pytest.raises(RuntimeError, match="stream_started"):
        timer.chunk(np.zeros(600, dtype=np.float32), shaper)
    with pytest.raises(RuntimeError, match="stream_started"):
        timer.stream_finished(Shaped(0, 0, 0))


@pytest.mark.slow
def test_timings_follow_each_segment_onto_the_shaped_request_timeline(onnx_engine: Engine) -> None:
    (segment,) = onnx_engine.plan("Short and sweet.", voice=VOICE, speed=1.0)
    rendered = onnx_engine.render_timed(segment, voice=VOICE, speed=1.0)
    (unshaped,) = WordTimer(onnx_engine, request_id="ref").whole_segment(segment, rendered, Shaped(0, 0, 0))
    assert unshaped.request_id == "ref"
    assert unshaped.index is None, "a whole segment's words are appended"
    assert [w.word for w in unshaped.words] == ["Short", "and", "sweet."]
    assert all(w.final for w in unshaped.words)

    # the same segment twice in one request: the policy cut 0.2 s at the start and 0.1 s at the end of each,
    # and put a 0.25 s pause before the second
    timer = WordTimer(onnx_engine, request_id="req-1")
    cut, tail, pause = 4_800, 2_400, 6_000
    (first,) = timer.whole_segment(segment, rendered, Shaped(cut, tail, 0))
    (second,) = timer.whole_segment(segment, rendered, Shaped(cut, tail, pause))
    kept = len(rendered.audio) - cut - tail
    for shift, placed in ((-cut, first), (kept + pause - cut, second)):
        floor = max(0, shift + cut) / 24_000
        ceiling = (shift + cut + kept) / 24_000
        for before, after in zip(unshaped.words, placed.words, strict=True):
            expected_start = min(max(before.start_s + shift / 24_000, floor), ceiling)
            expected_end = min(max(before.end_s + shift / 24_000, floor), ceiling)
            assert after.start_s == pytest.approx(expected_start, abs=0.0011)
            assert after.end_s == pytest.approx(expected_end, abs=0.0011)


@pytest.mark.slow
def test_a_streamed_segment_times_every_word_with_its_first_audio_then_finalises_them(onnx_engine: Engine) -> None:
    """The first chunk that has sound sends every word of the segment (estimates for those not final); later
    messages carry ``index`` and replace the estimates; after the last chunk every word is final and equal to the
    whole-segment computation on the same audio."""
    text = "Streaming word timings must never hold the voice back, not even for a moment."
    (segment,) = onnx_engine.plan(text, voice=VOICE, speed=1.0)
    streamed = onnx_engine.render_stream(segment, voice=VOICE, speed=1.0)
    chunks = list(streamed.chunks)
    assert len(chunks) >= 2
    timer = WordTimer(onnx_engine, request_id="r")
    timer.stream_started(segment, StreamedRender(durations=streamed.durations, chunks=iter(())))
    shaper = StreamShaper(boundary=Boundary.START, policy=SilencePolicy())
    held: list[WordTiming] = []
    messages = []
    for number, chunk in enumerate(chunks):
        audio = shaper.push(chunk)
        sent = timer.chunk(chunk, shaper)
        if number == 0:
            assert len(audio), "the first chunk has sound"
            (message,) = sent
            assert [w.word for w in message.words] == text.split(), "every word goes out with the first audio"
            assert not message.final, "words past the first chunk are estimates"
        messages.extend(sent)
    shaper.finish()
    assert shaper.result is not None
    messages.extend(timer.stream_finished(shaper.result))
    for message in messages:
        apply_word_timings(held, message)
    assert all(m.index is not None for m in messages[1:])
    assert all(w.final for w in held)
    assert [w.word for w in held] == text.split()

    whole = WordTimer(onnx_engine, request_id="r").whole_segment(
        segment, Rendered(audio=np.concatenate(chunks), durations=streamed.durations), shaper.result
    )
    assert tuple(held) == whole[0].words
