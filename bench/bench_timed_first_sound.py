"""First sound of a request with word timings vs the same request without, through a real server, side by side.

What the agent does for every sentence: one ``synthesize`` on a TTS session, always with ``"timings": true`` (it
needs the timings to cut its history truthfully at a barge-in). Word timings must never hold the voice back
(issue 29): a timed request's first audible sample should come when the untimed one's does.

For each sentence (the first sentence of each corpus reply, then later sentences of the same replies up to
``--sentences``; the agent's first request of a turn is a first sentence) a fresh WebSocket session on a real
``kokoro-server`` (defaults: onnx int8, streaming decoder on) is sent the sentence alone, timed and untimed in
alternating order. Measured at the client, as a player that starts at the first PCM frame hears it
(``benchlib.Listener``): the first audible sample, the first ``word_timings`` frame, and whether every word was
timed before its audio. Prints the medians, the paired difference timed - untimed (median and p90) and the ratio.

``--other-src DIR`` runs a second server from another checkout of this repository side by side (e.g. a ``git
worktree`` of the commit before the change: ``git worktree add /tmp/before 0f48591``), so before and after are
measured in the same run on the same machine.

    uv run python bench/bench_timed_first_sound.py [--sentences 30] [--other-src /tmp/before]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from benchlib import Listener, percentile, print_table, run_server
from corpus import REPLIES
from websockets.asyncio.client import connect

from relay_core.text.segmenter import split_sentences
from relay_core.tts.client import AudioReceived, RequestEnded, TimingsReceived, TtsClientSession
from relay_core.tts.messages import SynthesisComplete, Synthesize
from relay_core.word_timings import WordTiming, apply_word_timings

LONG_WORDS = 10
"""Sentences at least this long are reported apart: their words outlast the first decoder chunk."""


@dataclass(frozen=True, slots=True)
class Heard:
    """One request as a client received it (seconds after sending it)."""

    first_sound_s: float
    first_timings_s: float | None
    timed_before_audio: bool
    """Every word was timed (some message) before any of its audio had arrived."""
    pcm_bytes: int


async def speak(url: str, text: str, *, timings: bool) -> Heard:
    client = TtsClientSession()
    listener = Listener()
    words: list[WordTiming] = []
    first_timed_at: list[int] = []
    first_timings: float | None = None
    samples = 0
    async with connect(url, max_size=None, open_timeout=60) as ws:
        start = time.perf_counter()
        await ws.send(client.synthesize(Synthesize(text=text, request_id="bench", timings=timings)))
        async with asyncio.timeout(300):
            while True:
                frame = await ws.recv()
                now = time.perf_counter() - start
                for event in client.receive_frame(frame):
                    if isinstance(event, AudioReceived):
                        listener.arrive(event.pcm, now)
                        samples += len(event.pcm) // 2
                    elif isinstance(event, TimingsReceived):
                        first_timings = now if first_timings is None else first_timings
                        apply_word_timings(words, event.timings)
                        first_timed_at.extend([samples] * (len(words) - len(first_timed_at)))
                    elif isinstance(event, RequestEnded):
                        if not isinstance(event.outcome, SynthesisComplete):
                            raise RuntimeError(f"the request failed: {event.outcome}")
                        ordered = all(
                            at <= round(word.start_s * 24_000) + 24
                            for word, at in zip(words, first_timed_at, strict=True)
                        )
                        if listener.first_sound_s is None:
                            raise RuntimeError(f"no audible sound for {text[:40]!r}")
                        return Heard(listener.first_sound_s, first_timings, ordered, len(listener.pcm))


def sentences(count: int) -> list[str]:
    """The first sentence of each corpus reply, then the second ones, ...: ``count`` sentences of 2+ words."""
    split = [split_sentences(reply) for reply in REPLIES]
    picked: list[str] = []
    for position in range(max(len(s) for s in split)):
        picked.extend(s[position] for s in split if len(s) > position and len(s[position].split()) > 1)
    return picked[:count]


@contextlib.contextmanager
def servers(other_src: Path | None) -> Iterator[dict[str, str]]:
    """This tree's server (and another checkout's, when given), each on its own port."""
    with contextlib.ExitStack() as stack:
        urls = {"this tree": stack.enter_context(run_server()).ws_url}
        if other_src is not None:
            path = f"{other_src / 'containers/kokoro/src'}:{other_src / 'core/src'}"
            urls[f"{other_src.name}"] = stack.enter_context(run_server(env={"PYTHONPATH": path})).ws_url
        yield urls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=30, help="sentences to speak (each timed and untimed)")
    parser.add_argument("--other-src", type=Path, default=None, help="also a server from this checkout")
    args = parser.parse_args(argv)
    texts = sentences(args.sentences)
    with servers(args.other_src) as urls:
        configs = [(name, timed) for name in urls for timed in (False, True)]
        results: dict[tuple[str, bool], list[Heard]] = {config: [] for config in configs}
        for url in urls.values():
            asyncio.run(speak(url, texts[0], timings=True))  # warm-up
        for number, text in enumerate(texts):
            order = configs if number % 2 == 0 else configs[::-1]
            for name, timed in order:
                results[name, timed].append(asyncio.run(speak(urls[name], text, timings=timed)))
    rows = []
    for name in urls:
        untimed_runs, timed_runs = results[name, False], results[name, True]
        pairs = list(zip(untimed_runs, timed_runs, strict=True))
        assert all(p.pcm_bytes == t.pcm_bytes for p, t in pairs), "the timed request's audio differs"
        diffs = [(t.first_sound_s - p.first_sound_s) * 1000 for p, t in pairs]
        long_diffs = [d for d, text in zip(diffs, texts, strict=True) if len(text.split()) >= LONG_WORDS]
        ratios = [t.first_sound_s / p.first_sound_s for p, t in pairs]
        lead = [(t.first_sound_s - t.first_timings_s) * 1000 for t in timed_runs if t.first_timings_s is not None]
        rows.append(
            (
                name,
                f"{statistics.median(p.first_sound_s for p in untimed_runs) * 1000:.0f}",
                f"{statistics.median(t.first_sound_s for t in timed_runs) * 1000:.0f}",
                f"{statistics.median(diffs):+.0f} / {percentile(diffs, 0.9):+.0f}",
                f"{statistics.median(long_diffs):+.0f} ({len(long_diffs)})" if long_diffs else "-",
                f"{statistics.median(ratios):.3f}",
                f"{statistics.median(lead):+.0f}" if lead else "-",
                f"{sum(t.timed_before_audio for t in timed_runs)}/{len(timed_runs)}",
            )
        )
    print_table(
        f"first audible sound, {len(texts)} sentences alone on a fresh session, timed vs untimed (same run)",
        (
            "server",
            "untimed median ms",
            "timed median ms",
            "timed - untimed, median / p90 ms",
            f"timed - untimed, sentences of {LONG_WORDS}+ words, median ms (count)",
            "timed / untimed, median",
            "first timings before first sound, median ms",
            "every word timed before its audio",
        ),
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
