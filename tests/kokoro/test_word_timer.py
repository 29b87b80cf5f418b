"""WordTimer: a request's engine wrapped to keep durations, and each segment's timings placed after the silence edit."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pytest

from kokoro_server.engines import Engine, Segment
from kokoro_server.word_timer import WordTimer


@dataclass(frozen=True)
class Shaped:
    cut_start_samples: int
    cut_end_samples: int
    pause_samples: int


@dataclass
class Progress:
    shaped: list[Shaped] = field(default_factory=list)


class PlainEngine:
    """An engine without durations (like a test double): timings are simply not available."""

    name = "plain"
    sample_rate = 24_000
    default_voice = "v"

    def voices(self) -> list[str]:
        return ["v"]

    def check_voice(self, spec: str) -> None:
        return None

    def plan(self, text: str, *, voice: str, speed: float) -> list[Segment]:
        return [Segment(text=text, phonemes="a", tokens=(1,))]

    def render(self, segment: Segment, *, voice: str, speed: float) -> npt.NDArray[np.float32]:
        return np.zeros(600, dtype=np.float32)


def test_an_engine_without_durations_is_used_as_is_and_gives_no_timings() -> None:
    engine = PlainEngine()
    timer = WordTimer(engine, request_id="r")
    assert timer.engine is engine
    (segment,) = timer.engine.plan("hi", voice="v", speed=1.0)
    timer.engine.render(segment, voice="v", speed=1.0)
    assert timer.pending(Progress([Shaped(0, 0, 0)])) == []


@pytest.mark.slow
def test_timings_follow_each_segment_onto_the_shaped_request_timeline(onnx_engine: Engine) -> None:
    reference = WordTimer(onnx_engine, request_id="ref")
    (segment,) = reference.engine.plan("Short and sweet.", voice="jf_alpha", speed=1.0)
    audio = reference.engine.render(segment, voice="jf_alpha", speed=1.0)
    assert audio.tobytes() == onnx_engine.render(segment, voice="jf_alpha", speed=1.0).tobytes()
    (unshaped,) = reference.pending(Progress([Shaped(0, 0, 0)]))
    assert unshaped.request_id == "ref"
    assert [w.word for w in unshaped.words] == ["Short", "and", "sweet."]
    assert reference.pending(Progress([Shaped(0, 0, 0)])) == [], "each rendered segment is timed once"

    # the same segment twice in one request: the policy cut 0.2 s at the start and 0.1 s at the end of each,
    # and put a 0.25 s pause before the second
    timer = WordTimer(onnx_engine, request_id="req-1")
    cut, tail, pause = 4_800, 2_400, 6_000
    progress = Progress()
    timer.engine.render(segment, voice="jf_alpha", speed=1.0)
    progress.shaped.append(Shaped(cut, tail, 0))
    (first,) = timer.pending(progress)
    timer.engine.render(segment, voice="jf_alpha", speed=1.0)
    assert timer.pending(progress) == [], "not timed before the silence policy has shaped it"
    progress.shaped.append(Shaped(cut, tail, pause))
    (second,) = timer.pending(progress)
    kept = len(audio) - cut - tail
    for shift, placed in ((-cut, first), (kept + pause - cut, second)):
        floor = max(0, shift + cut) / 24_000
        ceiling = (shift + cut + kept) / 24_000
        for before, after in zip(unshaped.words, placed.words, strict=True):
            expected_start = min(max(before.start_s + shift / 24_000, floor), ceiling)
            expected_end = min(max(before.end_s + shift / 24_000, floor), ceiling)
            assert after.start_s == pytest.approx(expected_start, abs=0.0011)
            assert after.end_s == pytest.approx(expected_end, abs=0.0011)
