"""Throughput and latency under concurrency: the server vs the raw engine, side by side.

For 1, 2, 4, 8, 16 concurrent sessions, each speaking the reference text as four sentence requests on its own
WebSocket session, measure aggregate audio seconds produced per wall second (and per CPU core) and p50/p95 time
to first audio. Then the same work on the raw engine in this process (N threads calling ``Engine.render``
segment by segment, no server), so the server's overhead is a ratio (target: server >= 0.95 of raw).
Usage: ``python bench/bench_concurrency.py [--sessions 1 2 4 8 16]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from concurrent.futures import ThreadPoolExecutor

from benchlib import REFERENCE_TEXT, percentile, print_table, run_server, speak_pieces

from kokoro_server.engines import Engine, EngineConfig, load_engine
from relay_core.text.segmenter import split_sentences

SENTENCES = split_sentences(REFERENCE_TEXT)


async def server_round(ws_url: str, sessions: int) -> tuple[float, list[float]]:
    start = time.perf_counter()
    timings = await asyncio.gather(*(speak_pieces(ws_url, SENTENCES) for _ in range(sessions)))
    wall = time.perf_counter() - start
    audio = sum(t.audio_s for t in timings)
    return audio / wall, [t.first_audio_s or float("nan") for t in timings]


def raw_round(engine: Engine, sessions: int) -> tuple[float, list[float]]:
    voice = engine.default_voice

    def one_session() -> tuple[float, float]:
        begin = time.perf_counter()
        first = None
        samples = 0
        for sentence in SENTENCES:
            for segment in engine.plan(sentence, voice=voice, speed=1.0):
                samples += len(engine.render(segment, voice=voice, speed=1.0))
                if first is None:
                    first = time.perf_counter() - begin
        return samples / engine.sample_rate, first or float("nan")

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=sessions) as pool:
        results = list(pool.map(lambda _: one_session(), range(sessions)))
    wall = time.perf_counter() - start
    return sum(a for a, _ in results) / wall, [f for _, f in results]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--workers", type=int, default=None, help="kokoro-server --workers (default: its own)")
    parser.add_argument("--threads", type=int, default=None, help="kokoro-server --threads (default: every core)")
    args = parser.parse_args()
    server_args = [f"--{name}={value}" for name in ("workers", "threads") if (value := getattr(args, name))]
    cores = os.cpu_count() or 1
    engine = load_engine(EngineConfig())
    engine.synthesize("Warm up.", voice=engine.default_voice, speed=1.0)
    rows = []
    with run_server(*server_args) as server:
        asyncio.run(speak_pieces(server.ws_url, ["Warm up."]))
        for n in args.sessions:
            served, server_ttfa = asyncio.run(server_round(server.ws_url, n))
            raw, raw_ttfa = raw_round(engine, n)
            rows.append(
                [
                    n,
                    served,
                    served / cores,
                    raw,
                    served / raw,
                    percentile(server_ttfa, 0.5) * 1000,
                    percentile(server_ttfa, 0.95) * 1000,
                    percentile(raw_ttfa, 0.5) * 1000,
                    percentile(raw_ttfa, 0.95) * 1000,
                ]
            )
    print_table(
        f"Concurrency on {cores} cores ({' '.join(server_args) or 'server defaults'}): audio seconds per wall "
        "second, and time to first audio",
        [
            "sessions",
            "server audio s/s",
            "server per core",
            "raw engine audio s/s",
            "server/raw",
            "server TTFA p50 ms",
            "server TTFA p95 ms",
            "raw TTFA p50 ms",
            "raw TTFA p95 ms",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
