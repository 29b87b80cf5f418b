"""Server footprint: time to a healthy /ping from process start, model load time, peak RSS under load.

Starts a real ``kokoro-server`` process three times (onnx int8 engine), measures the time from spawn to the
first 200 on /ping, then drives 4 concurrent sessions while sampling the process's RSS (with its children).
Also loads the engine in this process to time the model load alone. Targets: healthy /ping within 3 s,
RSS under 600 MB. Usage: ``python bench/bench_server.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import threading
import time

import psutil
from benchlib import REFERENCE_TEXT, median, print_table, run_server, speak_pieces

from kokoro_server.engines import EngineConfig, load_engine
from relay_core.text.segmenter import split_sentences


def rss_mb(pid: int) -> float:
    process = psutil.Process(pid)
    total = int(process.memory_info().rss)
    for child in process.children(recursive=True):
        total += int(child.memory_info().rss)
    return total / 2**20


class RssSampler:
    """Samples a process's RSS every 50 ms in a background thread while in use."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append(rss_mb(self.pid))
            self._stop.wait(0.05)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


async def drive(ws_url: str, sessions: int) -> None:
    await asyncio.gather(*(speak_pieces(ws_url, split_sentences(REFERENCE_TEXT)) for _ in range(sessions)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=None, help="kokoro-server --workers (default: its own)")
    args = parser.parse_args()
    server_args = [f"--workers={args.workers}"] if args.workers else []
    load_times = []
    for _ in range(3):
        start = time.perf_counter()
        load_engine(EngineConfig())
        load_times.append(time.perf_counter() - start)
    healthy = []
    peak = 0.0
    idle = 0.0
    for attempt in range(3):
        with run_server(*server_args) as server:
            healthy.append(server.healthy_after_s)
            if attempt:
                continue
            idle = rss_mb(server.process.pid)
            with RssSampler(server.process.pid) as sampler:
                asyncio.run(drive(server.ws_url, 4))
            peak = max(sampler.samples)
    print_table(
        f"Server footprint (onnx int8 engine, {' '.join(server_args) or 'server defaults'})",
        ["measure", "value", "target"],
        [
            ["time to healthy /ping, median of 3 (s)", median(healthy), "<= 3 s"],
            ["model load in process, median of 3 (s)", median(load_times), ""],
            ["RSS after start (MB)", idle, ""],
            ["peak RSS, 4 concurrent sessions (MB)", peak, "< 600 MB"],
        ],
    )


if __name__ == "__main__":
    main()
