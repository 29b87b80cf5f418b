"""First sound with the decoder streamed within a segment vs whole segments, side by side in one run (solo).

For every corpus reply, a fresh session on one scheduler (1 worker, 2 threads as the server runs on 2 cores):
the time from the request to its first non-empty PCM piece, and to its last; streaming on and off alternate per
reply, so both see the same machine state. Prints medians and the ratio first sound / whole-reply synthesis
(issue 21's target: <= 0.12), and the median first sound of replies whose first sentence has >= 8 words
(target <= 500 ms). ``--timings`` adds a third configuration, streaming on with word timings asked for (as the
agent always asks): its audio is held back to the end of the last word already timed (docs/server.md), which is
what this row prices.

    uv run python bench/bench_stream_first_sound.py [--replies N] [--margin 16] [--first 12] [--later 48] [--growth 1]
        [--timings]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time

from benchlib import print_table
from corpus import REPLIES
from stream_options import engine_with_schedule, schedule_of, schedule_parser

from kokoro_server.engines.speech_engine import SpeechEngine
from kokoro_server.policy import SpeechPolicy
from kokoro_server.scheduled_speech import ScheduledSpeech
from kokoro_server.scheduler import Scheduler, SchedulerSession
from kokoro_server.word_timer import WordTimer
from relay_core.text.segmenter import split_sentences


async def timed(engine: SpeechEngine, scheduler: Scheduler, text: str, *, timings: bool = False) -> tuple[float, float]:
    timer = WordTimer(engine, request_id="bench") if timings else None
    speech = ScheduledSpeech(
        engine if timer is None else timer.engine,
        scheduler,
        SchedulerSession("bench"),
        text=text,
        voice="jf_alpha",
        speed=1.0,
    )
    start = time.perf_counter()
    first: float | None = None
    async for pcm in speech.pcm_segments():
        if timer is not None:
            timer.pending(speech)
        if pcm and first is None:
            first = time.perf_counter() - start
    return (first or 0.0), time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = schedule_parser(__doc__.splitlines()[0])
    parser.add_argument("--timings", action="store_true", help="also streaming on with word timings asked for")
    args = parser.parse_args(argv)
    engine = engine_with_schedule(args)
    schedulers = {
        on: Scheduler(workers=1, name=f"s{on}", speech=SpeechPolicy(stream_decoder=on)) for on in (False, True)
    }
    configs = {"off": (False, False), "on": (True, False)}
    if args.timings:
        configs["on, timed"] = (True, True)
    results: dict[str, list[tuple[str, float, float]]] = {name: [] for name in configs}
    texts = [t for t in REPLIES[: args.replies] if len(t.split()) > 1]
    asyncio.run(timed(engine, schedulers[True], texts[0]))  # warm-up
    for text in texts:
        for name, (on, with_timings) in configs.items():
            first, total = asyncio.run(timed(engine, schedulers[on], text, timings=with_timings))
            results[name].append((text, first, total))
    rows = []
    for name in configs:
        firsts = [r[1] for r in results[name]]
        ratio = [r[1] / r[2] for r in results[name]]
        long_first = [r[1] for r in results[name] if len(split_sentences(r[0])[0].split()) >= 8]
        rows.append(
            (
                name,
                f"{statistics.median(firsts) * 1000:.0f}",
                f"{statistics.median(long_first) * 1000:.0f}",
                f"{statistics.median(r[2] for r in results[name]):.2f}",
                f"{statistics.median(ratio):.3f}",
            )
        )
    print_table(
        f"solo first sound, {len(texts)} corpus replies, streaming on/off (same run), {schedule_of(engine)}",
        (
            "streaming",
            "median first sound ms",
            "median first sound, 1st sentence >= 8 words, ms",
            "median whole reply s",
            "median first sound / whole reply",
        ),
        rows,
    )
    for scheduler in schedulers.values():
        scheduler.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
