"""Under load: the decoder streamed within a segment vs whole segments, side by side in one run (issue 21).

``kokoro-server`` processes with their defaults, one with ``KOKORO_STREAM_DECODER=off`` (whole segments), one with
``on`` (the default: only the segment a listener is waiting on streams, a session's first sound; docs/server.md),
with ``--every`` one more with ``KOKORO_STREAM_DECODER=every`` (every segment streams, the first version), all up
for the whole run but measured one at a time: ``--rounds`` rounds alternate off, on[, every] (so all see the same
machine state), each round 8 sessions x 3 pipelined requests (three sentences of corpus replies per session, as
bench_first_sound.py plans them; ``--sessions``/``--requests`` change it), all sessions at once. Then, once per
server, every session of the plan alone, one after another: a session's PCM must be identical solo and loaded.
``--baseline`` adds one round on bench/baseline_server.py (one whole request at a time behind one global lock), the
issue's reference for the 8x3 target (p95 first sound <= 0.5 of the baseline's, wall <= 1.0); ``--baseline-rounds N``
N rounds, each right after the same round of the other servers (the baseline is up with them, so it alternates too).

First sound is the first *audible* sample (-40 dBFS, kokoro_server.silence), as a client that starts playing at
the first byte hears it (benchlib.speak_session). Prints, per server, p50/p95 of each session's first sound and
the p95 over every request's (pooled over the rounds), the median round's wall time, the PCM check; then the
ratios to streaming off (and to the baseline) of p95 first sound and wall time. Beside the wall time, each server
process's CPU seconds per round (its work: on a machine shared with other processes the wall time moves by tens of
percent from round to round, the work much less) and the wall ratio of each round on its own.

``--also-schedule SPEC`` (repeatable) adds a server streaming ``on`` whose engine decodes on another chunk schedule
(bench/stream_options.py's spelling, e.g. ``32:12:48*2``: issue 21's schedule, every chunk on its own window), so
two schedules are compared under the same load in the same run (issue 29). ``--work`` first counts, in this process,
the decoder's work on the plan for the default schedule and each ``--also-schedule``: frames decoded / frames over
the plan (streaming ``on``'s choice of segments), over the streamed segments alone, and over the first segment
of every corpus reply (what a solo first sound streams), with the most windows one segment takes.
``--solo-replies N`` first measures, in this process, the solo first sound, whole reply and longest stall of N
corpus replies with streaming off and on with each schedule, the arms alternating reply by reply (``--rounds 0``:
only that and ``--work``). ``--also-server-args ARGS`` (repeatable) adds a server streaming ``on`` with other
``kokoro-server`` options (e.g. ``'--workers 2 --threads 1'``). ``--no-off`` leaves out streaming off,
``--no-solo`` the PCM check (to size a run down on a busy machine).

    uv run python bench/bench_stream_load.py [--rounds 2] [--sessions 8] [--requests 3] [--baseline] [--every]
        [--baseline-rounds N] [--also-schedule 32:12:48*2] [--also-server-args '--workers 2 --threads 1'] [--work]
        [--solo-replies 12] [--no-off] [--no-solo]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import time

import psutil
from bench_first_sound import STARTUP_S, alone, concurrency_sessions, crowd
from benchlib import (
    ServerProcess,
    SessionAudio,
    median,
    percentile,
    print_table,
    run_baseline,
    run_server,
    speak_session,
)
from corpus import REPLIES
from stream_options import decoder_work, parse_schedule, spelled

from kokoro_server.engines import Engine, EngineConfig, load_engine, onnx_synth
from kokoro_server.engines.chunk_plan import ChunkSchedule, DecodeWindow, decode_windows
from kokoro_server.policy import SpeechPolicy
from kokoro_server.scheduled_speech import speak_offline
from kokoro_server.scheduler import Scheduler
from relay_core.text.segmenter import split_sentences

SERVERS = {
    "off": ({"KOKORO_STREAM_DECODER": "off"}, "streaming off (whole segments)"),
    "on": ({"KOKORO_STREAM_DECODER": "on"}, f"streaming on (the first sound streams), {spelled(ChunkSchedule())}"),
    "every": ({"KOKORO_STREAM_DECODER": "every"}, "streaming every segment"),
}


def plan_segments_decoded(engine: Engine, plan: list[list[str]]) -> list[tuple[int, int, bool]]:
    """Every segment of ``plan`` as the server decodes it with streaming ``on`` (each session's requests in order,
    as speak_offline gives them): its frames, its leading padding and whether it streams. Counted by decoding the
    plan once in this process (the choice reads the audio sent before a segment)."""
    seen: list[tuple[int, int, bool]] = []
    counted = decode_windows

    def counting(frames: int, *, lead_frames: int, schedule: ChunkSchedule, chunked: bool = True) -> list[DecodeWindow]:
        seen.append((frames, lead_frames, chunked))
        return counted(frames, lead_frames=lead_frames, schedule=schedule, chunked=chunked)

    setattr(onnx_synth, "decode_windows", counting)  # noqa: B010
    try:
        for pieces in plan:
            previous = None
            for text in pieces:
                speak_offline(engine, text, previous=previous)
                previous = text
    finally:
        setattr(onnx_synth, "decode_windows", counted)  # noqa: B010
    return seen


def first_segments(engine: Engine) -> list[tuple[int, int, bool]]:
    """The first segment of every corpus reply's first sentence (what a solo first sound streams), front end only."""
    out = []
    for reply in REPLIES:
        segment = engine.plan(split_sentences(reply)[0], voice=engine.default_voice, speed=1.0)[0]
        durations = engine.render_stream(segment, voice=engine.default_voice, speed=1.0).durations
        out.append((sum(durations), durations[0], True))
    return out


def print_solo(replies: int, schedules: list[ChunkSchedule]) -> None:
    """Solo first sound, streaming off and on with each schedule alternating reply by reply in this process (a fresh
    session per reply on one scheduler, 1 worker, 2 threads: bench_stream_first_sound.timed)."""
    from bench_stream_first_sound import timed  # noqa: PLC0415

    engine = load_engine(EngineConfig(threads=2))
    synth = engine._synthesizer
    assert isinstance(synth, onnx_synth.OnnxSynthesizer)
    arms: dict[str, ChunkSchedule | None] = {"off": None} | {f"on, {spelled(s)}": s for s in schedules}
    schedulers = {
        on: Scheduler(workers=1, name=f"solo-{on}", speech=SpeechPolicy(stream_decoder=on)) for on in (False, True)
    }
    texts = [t for t in REPLIES[:replies] if len(t.split()) > 1]
    asyncio.run(timed(engine, schedulers[True], texts[0]))  # warm-up
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in arms}
    for index, text in enumerate(texts):
        names = list(arms)
        for name in names[index % len(names) :] + names[: index % len(names)]:
            schedule = arms[name]
            if schedule is not None:
                synth.schedule = schedule
            results[name].append(asyncio.run(timed(engine, schedulers[schedule is not None], text)))
    for scheduler in schedulers.values():
        scheduler.shutdown()
    off_total = [total for _, total, _ in results["off"]]
    print_table(
        f"solo, {len(texts)} corpus replies, the arms alternating reply by reply",
        [
            "arm",
            "median first sound ms",
            "median whole reply s",
            "first sound / whole reply",
            "first sound / off's whole reply",
            "longest stall ms, median / max",
        ],
        [
            [
                name,
                median([r[0] for r in rows]) * 1000,
                median([r[1] for r in rows]),
                median([r[0] / r[1] for r in rows]),
                median([r[0] / total for r, total in zip(rows, off_total, strict=True)]),
                f"{median([r[2] for r in rows]) * 1000:.0f} / {max(r[2] for r in rows) * 1000:.0f}",
            ]
            for name, rows in results.items()
        ],
    )


def print_work(plan: list[list[str]], schedules: list[ChunkSchedule]) -> None:
    """The decoder's work on the plan and on the corpus's first segments, per schedule (no server)."""
    engine = load_engine(EngineConfig(threads=2))
    loaded = plan_segments_decoded(engine, plan)
    streamed = [s for s in loaded if s[2]]
    firsts = first_segments(engine)
    rows: list[list[object]] = []
    for schedule in schedules:
        row: list[object] = [spelled(schedule)]
        for segments in (loaded, streamed, firsts):
            frames, decoded, most = decoder_work(segments, schedule)
            row += [f"{decoded}/{frames}", decoded / frames, most]
        rows.append(row)
    frames_sorted = sorted(f for f, _, _ in firsts)
    print_table(
        f"decoder work: frames decoded / frames (the load plan: {len(loaded)} segments, {len(streamed)} streamed; "
        f"corpus first segments: {len(firsts)}, median {frames_sorted[len(frames_sorted) // 2]} frames)",
        [
            "schedule",
            "plan, decoded/frames",
            "plan ratio",
            "plan, most windows",
            "streamed, decoded/frames",
            "streamed ratio",
            "streamed, most windows",
            "corpus first segments",
            "first segments ratio",
            "first segments, most windows",
        ],
        rows,
    )


def cpu_s(server: ServerProcess) -> float:
    """The CPU seconds (user + system) ``server``'s process has used so far: its work, which other processes on
    the machine do not lengthen the way they lengthen its wall time."""
    times = psutil.Process(server.process.pid).cpu_times()
    return float(times.user + times.system)


def loaded_figures(runs: list[tuple[list[SessionAudio], float]]) -> tuple[list[float], list[float], list[float]]:
    """Each session's first sound, every request's first sound (both pooled over the rounds), each round's wall."""
    firsts = [s.first_sound_s for sessions, _ in runs for s in sessions]
    requests = [r.first_sound_s for sessions, _ in runs for s in sessions for r in s.requests if r.first_sound_s]
    walls = [wall for _, wall in runs]
    return firsts, requests, walls


def identical(runs: list[tuple[list[SessionAudio], float]], solo: list[str]) -> str:
    """How many sessions of every loaded round have the PCM of the same session alone."""
    if not solo:
        return "not checked (--no-solo)"
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
    parser.add_argument("--baseline", action="store_true", help="one round on bench/baseline_server.py")
    parser.add_argument(
        "--baseline-rounds",
        type=int,
        default=0,
        help="rounds on bench/baseline_server.py, each after the same round of the others (--baseline: 1)",
    )
    parser.add_argument("--every", action="store_true", help="a third server with KOKORO_STREAM_DECODER=every")
    parser.add_argument(
        "--also-schedule",
        action="append",
        default=[],
        metavar="SPEC",
        help="one more server streaming on with this chunk schedule, e.g. 32:12:48*2 (repeatable)",
    )
    parser.add_argument(
        "--also-server-args",
        action="append",
        default=[],
        metavar="ARGS",
        help="one more server streaming on with these kokoro-server options, e.g. '--workers 2 --threads 1'",
    )
    parser.add_argument("--work", action="store_true", help="first count the decoder's work per schedule")
    parser.add_argument(
        "--solo-replies",
        type=int,
        default=0,
        metavar="N",
        help="first the solo first sound and stalls of N corpus replies, off and each schedule alternating",
    )
    parser.add_argument("--no-off", action="store_true", help="leave out streaming off (ratios to the baseline)")
    parser.add_argument("--no-solo", action="store_true", help="leave out the sessions alone (the PCM check)")
    args = parser.parse_args()
    if args.baseline and not args.baseline_rounds:
        args.baseline_rounds = 1
    plan = concurrency_sessions(args.sessions, args.requests)
    began = time.perf_counter()
    compared = [ChunkSchedule(), *(parse_schedule(spec) for spec in args.also_schedule)]
    if args.work:
        print_work(plan, compared)
    if args.solo_replies:
        print_solo(args.solo_replies, compared)
    if not args.rounds:
        return
    schedules: dict[str, str | None] = {name: None for name in SERVERS}
    server_args: dict[str, list[str]] = {}
    for spec in args.also_schedule:
        name = f"on {spec}"
        SERVERS[name] = ({"KOKORO_STREAM_DECODER": "on"}, f"streaming on, {spelled(parse_schedule(spec))}")
        schedules[name] = spec
    for options in args.also_server_args:
        name = f"on {options}"
        SERVERS[name] = ({"KOKORO_STREAM_DECODER": "on"}, f"streaming on, {options}")
        schedules[name] = None
        server_args[name] = options.split()
    names = [
        *([] if args.no_off else ["off"]),
        "on",
        *(f"on {spec}" for spec in [*args.also_schedule, *args.also_server_args]),
        *(["every"] if args.every else []),
    ]
    runs: dict[str, list[tuple[list[SessionAudio], float]]] = {name: [] for name in names}
    solo: dict[str, list[str]] = {}
    with contextlib.ExitStack() as stack:
        servers = {
            name: stack.enter_context(
                run_server(
                    *server_args.get(name, []), env=SERVERS[name][0], timeout_s=STARTUP_S, schedule=schedules[name]
                )
            )
            for name in names
        }
        urls = {name: server.ws_url for name, server in servers.items()}
        if args.baseline_rounds:
            servers["baseline"] = stack.enter_context(run_baseline(timeout_s=STARTUP_S))
        for server in servers.values():
            asyncio.run(speak_session(server.ws_url, ["Warm up."]))
        baseline: list[tuple[list[SessionAudio], float]] = []
        cpu: dict[str, list[float]] = {name: [] for name in servers}
        for round_index in range(max(args.rounds, args.baseline_rounds)):
            for name, server in servers.items():
                if round_index >= (args.baseline_rounds if name == "baseline" else args.rounds):
                    continue
                began_cpu = cpu_s(server)
                result = asyncio.run(crowd(server.ws_url, plan))
                cpu[name].append(cpu_s(server) - began_cpu)
                (baseline if name == "baseline" else runs[name]).append(result)
                print(f"round {round_index + 1}, {name}: wall {result[1]:.1f} s, CPU {cpu[name][-1]:.1f} s", flush=True)
        for name, url in urls.items():
            solo[name] = [] if args.no_solo else asyncio.run(alone(url, plan))
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
                median(cpu[name]),
                "",
                identical(runs[name], solo[name]),
            ]
        )
    references = [] if args.no_off else ["off"]
    if baseline:
        figures["baseline"] = loaded_figures(baseline)
        base_first, base_req, base_wall = figures["baseline"]
        rows.append(
            [
                f"baseline (whole request, global lock; {len(baseline)} round{'s' if len(baseline) > 1 else ''})",
                percentile(base_first, 0.5) * 1000,
                percentile(base_first, 0.95) * 1000,
                percentile(base_req, 0.95) * 1000,
                median(base_wall),
                median(cpu["baseline"]),
                "",
                "",
            ]
        )
        references.append("baseline")
    references += [f"on {spec}" for spec in [*args.also_schedule, *args.also_server_args]]
    for reference in references:
        ref_first, ref_req, ref_wall = figures[reference]
        for name in names:
            if name == reference or (reference.startswith("on ") and name != "on"):
                continue
            firsts, requests, walls = figures[name]
            paired = [mine / theirs for mine, theirs in zip(walls, ref_wall, strict=False)]
            rows.append(
                [
                    f"ratio {name} / {reference}",
                    percentile(firsts, 0.5) / percentile(ref_first, 0.5),
                    percentile(firsts, 0.95) / percentile(ref_first, 0.95),
                    percentile(requests, 0.95) / percentile(ref_req, 0.95),
                    median(walls) / median(ref_wall),
                    median(cpu[name]) / median(cpu[reference]),
                    ", ".join(f"{ratio:.3f}" for ratio in paired),
                    "",
                ]
            )
    print_table(
        f"{args.sessions} sessions x {args.requests} pipelined requests, {args.rounds} rounds per server alternating "
        "(first sound pooled over the rounds; wall and server CPU: median round)",
        [
            "server",
            "first sound p50 ms",
            "first sound p95 ms",
            "per-request p95 ms",
            "wall s",
            "server CPU s",
            "wall ratio, round by round",
            "PCM",
        ],
        rows,
    )
    print(f"\nbench ran {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
