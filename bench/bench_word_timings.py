"""What word timings cost: rendering with vs without them, side by side, on the onnx engine.

For each sentence of the reference text: ``Engine.render`` (audio only) vs ``Engine.render_timed`` plus
``segment_word_timings`` (the durations come out of the same forward pass; the extra work is the word alignment,
the frame mapping and the end fitting). Medians of --runs after one warm-up, interleaved so both see the same
machine load. Also the one-off cost at load time of declaring the duration output (protobuf edit of the model).
Usage: ``python bench/bench_word_timings.py [--runs 5] [--threads N]``.
"""

from __future__ import annotations

import argparse
import time

from benchlib import REFERENCE_TEXT, median, print_table

from kokoro_server.engines import Engine, EngineConfig, Segment, assemble_int8_model, load_engine
from kokoro_server.engines.onnx_durations import with_duration_output
from kokoro_server.word_timings import SegmentPlacement, segment_word_timings

VOICE = "jf_alpha"


def plain(engine: Engine, segment: Segment) -> float:
    started = time.perf_counter()
    engine.render(segment, voice=VOICE, speed=1.0)
    return time.perf_counter() - started


def timed(engine: Engine, segment: Segment) -> tuple[float, float]:
    """(total s, of which the timing work after the forward pass s)."""
    started = time.perf_counter()
    rendered = engine.render_timed(segment, voice=VOICE, speed=1.0)
    inferred = time.perf_counter()
    timings = segment_word_timings(
        engine, segment, rendered, SegmentPlacement(), request_id="bench", sample_rate=engine.sample_rate
    )
    assert timings is not None
    ended = time.perf_counter()
    return ended - started, ended - inferred


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    model = assemble_int8_model().read_bytes()
    edit_s = median([_edit(model) for _ in range(3)])
    engine = load_engine(EngineConfig(threads=args.threads))
    segments = engine.plan(REFERENCE_TEXT, voice=VOICE, speed=1.0)
    rows = []
    for index, segment in enumerate(segments):
        plain(engine, segment)
        timed(engine, segment)
        plains, timeds, extras = [], [], []
        for _ in range(args.runs):
            plains.append(plain(engine, segment))
            total, extra = timed(engine, segment)
            timeds.append(total)
            extras.append(extra)
        p, t, e = median(plains), median(timeds), median(extras)
        rows.append([index + 1, len(segment.text), p, t, e * 1000, t / p])
    print_table(
        f"Word timings on the onnx engine ({args.runs} runs, medians)",
        ["sentence", "chars", "render s", "render+timings s", "timing work ms", "ratio"],
        rows,
    )
    print(f"\nDeclaring the duration output at load: {edit_s * 1000:.0f} ms (once per process).")


def _edit(model: bytes) -> float:
    started = time.perf_counter()
    with_duration_output(model)
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
