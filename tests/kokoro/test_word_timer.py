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
    audio_bytes: int = 0
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
    pcm = timer.engine.render(segment, voice="v", speed=1.0).tobytes()
    assert timer.after_segment(Progress(len(pcm), [Shaped(0, 0, 0)]), pcm) is None


@pytest.mark.slow
def test_timings_follow_the_segment_onto_the_shaped_request_timeline(onnx_engine: Engine) -> None:
    timer = WordTimer(onnx_engine, request_id="req-1")
    (segment,) = timer.engine.plan("Short and sweet.", voice="jf_alpha", speed=1.0)
    audio = timer.engine.render(segment, voice="jf_alpha", speed=1.0)
    assert audio.tobytes() == onnx_engine.render(segment, voice="jf_alpha", speed=1.0).tobytes()
    unshaped = timer.after_segment(Progress(len(audio) * 2, [Shaped(0, 0, 0)]), b"\0" * (len(audio) * 2))
    assert unshaped is not None and unshaped.request_id == "req-1"
    assert [w.word for w in unshaped.words] == ["Short", "and", "sweet."]
    assert timer.after_segment(Progress(), b"") is None, "each rendered segment is timed once"

    timer.engine.render(segment, voice="jf_alpha", speed=1.0)
    # after 2 s of earlier audio; the policy cut 0.2 s at the start and put a 0.25 s pause in front
    cut, pause, earlier = 4_800, 6_000, 48_000
    pcm = b"\0" * ((len(audio) - cut + pause) * 2)
    shaped = timer.after_segment(Progress(earlier * 2 + len(pcm), [Shaped(cut, 0, pause)]), pcm)
    assert shaped is not None
    shift = (earlier + pause - cut) / 24_000
    for before, after in zip(unshaped.words, shaped.words, strict=True):
        assert after.start_s == pytest.approx(max(before.start_s + shift, (earlier + pause) / 24_000), abs=0.0011)
        assert after.end_s == pytest.approx(max(before.end_s + shift, (earlier + pause) / 24_000), abs=0.0011)
