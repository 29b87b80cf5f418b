"""First sound with the decoder streamed within a segment vs whole segments, side by side in one run (solo).

For every corpus reply, a fresh session on one scheduler (1 worker, 2 threads as the server runs on 2 cores):
the time from the request to its first audible sound (a client playing from the first PCM piece:
``benchlib.Listener``), and to its last piece; streaming on and off alternate per
reply, so both see the same machine state. Streaming on is the server's ``KOKORO_STREAM_DECODER=on`` (only the
segment a listener waits on, the first sound, streams; docs/server.md); ``every`` streams every segment. Prints
medians and the ratio first sound / whole-reply synthesis (issue 21's target: <= 0.12), against the same
configuration's whole reply and against streaming off's (the fixed reference: a configuration that does less work
after the first sound has a shorter whole reply, not a later first sound), the median first sound of replies whose
first sentence has >= 8 words (target <= 500 ms), and the longest stall after the first sound: how long a client
that plays from the first piece waits with nothing to play (the decoder falling behind the audio). ``--timings``
adds streaming on with word timings asked for (as the agent always asks): the timings observe the rendering and
never hold audio back (docs/server.md), which this row checks. ``--also-first N`` adds streaming on with
N audible frames in the first chunk instead of the schedule's (the first sound against the stall after it).

    uv run python bench/bench_stream_first_sound.py [--replies N] [--margin 16] [--first 12] [--later 48] [--growth 1]
        [--timings] [--no-every] [--also-first 24]
"""

from __future__ import annotations

import asyncio
import dataclasses
import statistics
import sys
import time

from benchlib import Listener, print_table
from corpus import REPLIES
from stream_options import engine_with_schedule, schedule_of, schedule_parser

from kokoro_server.engines.onnx_synth import OnnxSynthesizer
from kokoro_server.engines.speech_engine import SpeechEngine
from kokoro_server.policy import SpeechPolicy
from kokoro_server.scheduled_speech import ScheduledSpeech
from kokoro_server.scheduler import Scheduler, SchedulerSession
from kokoro_server.word_timer import WordTimer
from relay_core.speech_options import SpeechOptions
from relay_core.text.segmenter import split_sentences


async def timed(
    engine: SpeechEngine, scheduler: Scheduler, text: str, *, timings: bool = False
) -> tuple[float, float, float]:
    """First audible sound (a listener playing from the first piece: benchlib.Listener), last piece (seconds after
    the request) and the longest stall after the first piece."""
    speech = ScheduledSpeech(
        engine,
        scheduler,
        SchedulerSession("bench"),
        text=text,
        options=SpeechOptions("jf_alpha"),
        timer=WordTimer(engine, request_id="bench") if timings else None,
    )
    start = time.perf_counter()
    listener = Listener(sample_rate=engine.sample_rate)
    async for pcm in speech.pcm_segments():
        now = time.perf_counter() - start
        listener.arrive(pcm, now)
    return (listener.first_sound_s or 0.0), time.perf_counter() - start, listener.longest_stall_s


def main(argv: list[str] | None = None) -> int:
    parser = schedule_parser(__doc__.splitlines()[0])
    parser.add_argument("--timings", action="store_true", help="also streaming on with word timings asked for")
    parser.add_argument("--no-every", action="store_true", help="leave out KOKORO_STREAM_DECODER=every")
    parser.add_argument(
        "--also-first",
        type=int,
        action="append",
        default=[],
        help="also streaming on with this many audible frames in the first chunk (repeatable)",
    )
    args = parser.parse_args(argv)
    engine = engine_with_schedule(args)
    synth = engine._synthesizer
    assert isinstance(synth, OnnxSynthesizer)
    schedules = {"": synth.schedule} | {
        f", first {n}": dataclasses.replace(synth.schedule, first_frames=n) for n in args.also_first
    }
    policies = {
        "off": SpeechPolicy(stream_decoder=False),
        "on": SpeechPolicy(stream_decoder=True),
        "every": SpeechPolicy(stream_decoder=True, stream_every_segment=True),
    }
    schedulers = {name: Scheduler(workers=1, name=f"s-{name}", speech=p) for name, p in policies.items()}
    configs = {"off": ("off", False, ""), "on": ("on", False, "")}
    configs |= {f"on{label}": ("on", False, label) for label in schedules if label}
    if not args.no_every:
        configs["every"] = ("every", False, "")
    if args.timings:
        configs["on, timed"] = ("on", True, "")
    results: dict[str, list[tuple[str, float, float, float]]] = {name: [] for name in configs}
    texts = [t for t in REPLIES[: args.replies] if len(t.split()) > 1]
    asyncio.run(timed(engine, schedulers["on"], texts[0]))  # warm-up
    for text in texts:
        for name, (policy, with_timings, schedule) in configs.items():
            synth.schedule = schedules[schedule]
            first, total, stall = asyncio.run(timed(engine, schedulers[policy], text, timings=with_timings))
            results[name].append((text, first, total, stall))
    synth.schedule = schedules[""]  # the tables name the base schedule
    off_total = [r[2] for r in results["off"]]
    rows = []
    for name in configs:
        firsts = [r[1] for r in results[name]]
        ratio = [r[1] / r[2] for r in results[name]]
        ratio_off = [r[1] / total for r, total in zip(results[name], off_total, strict=True)]
        long_first = [r[1] for r in results[name] if len(split_sentences(r[0])[0].split()) >= 8]
        stalls = [r[3] for r in results[name]]
        rows.append(
            (
                name,
                f"{statistics.median(firsts) * 1000:.0f}",
                f"{statistics.median(long_first) * 1000:.0f}",
                f"{statistics.median(r[2] for r in results[name]):.2f}",
                f"{statistics.median(ratio):.3f}",
                f"{statistics.median(ratio_off):.3f}",
                f"{statistics.median(stalls) * 1000:.0f} / {max(stalls) * 1000:.0f}",
            )
        )
    print_table(
        f"solo first sound, {len(texts)} corpus replies, streaming off/on/every (same run), {schedule_of(engine)}",
        (
            "streaming",
            "median first sound ms",
            "median first sound, 1st sentence >= 8 words, ms",
            "median whole reply s",
            "median first sound / whole reply",
            "median first sound / whole reply off",
            "longest stall ms, median / max",
        ),
        rows,
    )
    for scheduler in schedulers.values():
        scheduler.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
