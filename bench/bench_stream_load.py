"""Under load: the decoder streamed within a segment vs whole segments, side by side in one run (issue 21).

``kokoro-server`` processes with their defaults, one with ``KOKORO_STREAM_DECODER=off`` (whole segments), one with
``on`` (the default: only the segment a listener is waiting on streams, a session's first sound; docs/server.md),
with ``--every`` one more with ``KOKORO_STREAM_DECODER=every`` (every segment streams, the first version), all up
for the whole run but measured one at a time: ``--rounds`` rounds alternate off, on[, every] (so all see the same
machine state), each round 8 sessions x 3 pipelined requests (three sentences of corpus replies per session, as
bench_first_sound.py plans them; ``--sessions``/``--requests`` change it), all sessions at once. Then, once per
server, every session of the plan alone, one after another: a session's PCM must be identical solo and loaded.
``--baseline`` adds one round on bench/baseline_server.py (one whole request at a time behind one global lock), the
issue's reference for the 8x3 target (p95 first sound <= 0.5 of the baseline's, wall <= 1.0).

First sound is the first *audible* sample (-40 dBFS, kokoro_server.silence), as a client that starts playing at
the first byte hears it (benchlib.speak_session). Prints, per server, p50/p95 of each session's first sound and
the p95 over every request's (pooled over the rounds), the median round's wall time, the PCM check; then the
ratios to streaming off (and to the baseline) of p95 first sound and wall time.

    uv run python bench/bench_stream_load.py [--rounds 2] [--sessions 8] [--requests 3] [--baseline] [--every]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import time

from bench_first_sound import STARTUP_S, alone, concurrency_sessions, crowd
from benchlib import SessionAudio, median, percentile, print_table, run_baseline, run_server, speak_session

SERVERS = {
    "off": ({"KOKORO_STREAM_DECODER": "off"}, "streaming off (whole segments)"),
    "on": ({"KOKORO_STREAM_DECODER": "on"}, "streaming on (the first sound streams)"),
    "every": ({"KOKORO_STREAM_DECODER": "every"}, "streaming every segment"),
}


def loaded_figures(runs: list[tuple[list[SessionAudio], float]]) -> tuple[list[float], list[float], list[float]]:
    """Each session's first sound, every request's first sound (both pooled over the rounds), each round's wall."""
    firsts = [s.first_sound_s for sessions, _ in runs for s in sessions]
    requests = [r.first_sound_s for sessions, _ in runs for s in sessions for r in s.requests if r.first_sound_s]
    walls = [wall for _, wall in runs]
    return firsts, requests, walls


def identical(runs: list[tuple[list[SessionAudio], float]], solo: list[str]) -> str:
    """How many sessions of every loaded round have the PCM of the same session alone."""
    same = sum(
        hashlib.sha256(s.pcm).hexdigest() == alone_hash
        for sessions, _ in runs
        for s, alone_hash in zip(sessions, solo, strict=True)
    )
    return f"{same}/{len(solo) * len(runs)} identical to solo"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--requests", type=int, default=3)
    parser.add_argument("--baseline", action="store_true", help="one more round on bench/baseline_server.py")
    parser.add_argument("--every", action="store_true", help="a third server with KOKORO_STREAM_DECODER=every")
    args = parser.parse_args()
    plan = concurrency_sessions(args.sessions, args.requests)
    names = ["off", "on", *(["every"] if args.every else [])]
    began = time.perf_counter()
    runs: dict[str, list[tuple[list[SessionAudio], float]]] = {name: [] for name in names}
    solo: dict[str, list[str]] = {}
    with contextlib.ExitStack() as stack:
        urls = {
            name: stack.enter_context(run_server(env=SERVERS[name][0], timeout_s=STARTUP_S)).ws_url for name in names
        }
        for url in urls.values():
            asyncio.run(speak_session(url, ["Warm up."]))
        for round_index in range(args.rounds):
            for name, url in urls.items():
                sessions, wall = asyncio.run(crowd(url, plan))
                runs[name].append((sessions, wall))
                print(f"round {round_index + 1}, streaming {name}: wall {wall:.1f} s", flush=True)
        for name, url in urls.items():
            solo[name] = asyncio.run(alone(url, plan))
    baseline: list[tuple[list[SessionAudio], float]] = []
    if args.baseline:
        with run_baseline(timeout_s=STARTUP_S) as base:
            asyncio.run(speak_session(base.ws_url, ["Warm up."]))
            baseline.append(asyncio.run(crowd(base.ws_url, plan)))
    figures = {name: loaded_figures(result) for name, result in runs.items()}
    rows: list[list[object]] = []
    for name in names:
        firsts, requests, walls = figures[name]
        rows.append(
            [
                SERVERS[name][1],
                percentile(firsts, 0.5) * 1000,
                percentile(firsts, 0.95) * 1000,
                percentile(requests, 0.95) * 1000,
                median(walls),
                identical(runs[name], solo[name]),
            ]
        )
    references = [("off", figures["off"])]
    if baseline:
        base_first, base_req, base_wall = loaded_figures(baseline)
        rows.append(
            [
                "baseline (whole request, global lock; 1 round)",
                percentile(base_first, 0.5) * 1000,
                percentile(base_first, 0.95) * 1000,
                percentile(base_req, 0.95) * 1000,
                median(base_wall),
                "",
            ]
        )
        references.append(("baseline", (base_first, base_req, base_wall)))
    for reference, (ref_first, ref_req, ref_wall) in references:
        for name in names:
            if name == reference:
                continue
            firsts, requests, walls = figures[name]
            rows.append(
                [
                    f"ratio {name} / {reference}",
                    percentile(firsts, 0.5) / percentile(ref_first, 0.5),
                    percentile(firsts, 0.95) / percentile(ref_first, 0.95),
                    percentile(requests, 0.95) / percentile(ref_req, 0.95),
                    median(walls) / median(ref_wall),
                    "",
                ]
            )
    print_table(
        f"{args.sessions} sessions x {args.requests} pipelined requests, {args.rounds} rounds per server alternating "
        "(first sound pooled over the rounds; wall: median round)",
        ["server", "first sound p50 ms", "first sound p95 ms", "per-request p95 ms", "wall s", "PCM"],
        rows,
    )
    print(f"\nbench ran {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
