"""Time to first SOUND over the corpus: the container's policies vs the same server with them off, and under
concurrency vs a naive baseline (one whole request at a time behind one global lock), side by side in one run.

1. Solo, over the corpus (bench/corpus.py): each reply's sentences sent as separate requests on one session (as
   the agent does), on ``kokoro-server`` with its defaults (silence policy and first fragment on) and on a second
   ``kokoro-server`` with both off (``KOKORO_SILENCE=off KOKORO_FIRST_FRAGMENT_WORDS=off``), interleaved reply
   by reply. Per reply: time to first sound (the first sample at or above -40 dBFS, as a client playing from the
   first byte hears it), its ratio to the time to synthesize the whole reply (the session's last byte), the
   leading silence in the audio, the longest silence inside the reply, and the audio length.
2. Concurrency: 8 sessions x 3 pipelined requests (three sentences of a different reply per session), on the
   server with its defaults and on bench/baseline_server.py: p50/p95 of each session's first sound, wall time,
   and whether every session's PCM equals that session run alone on the same server (nothing mixed).

Targets (issue 12): solo TTFS / whole-reply <= 0.12; leading silence <= 30 ms; longest inner silence <= 450 ms;
8x3 p95 first sound <= 0.5 of the baseline's in at most its wall time. ``--quick`` runs 12 replies and one
concurrency round (about 5 minutes on 2 quiet cores). Usage: ``python bench/bench_first_sound.py [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import time

from benchlib import SessionAudio, median, percentile, print_table, run_baseline, run_server, speak_session
from corpus import REPLIES

from kokoro_server.silence import first_audible_sample, pcm16_to_float, silences
from relay_core import limits
from relay_core.text.segmenter import split_sentences

STARTUP_S = 600.0
"""Generous: on a shared, loaded machine a model load can take minutes."""
POLICIES_OFF = {"KOKORO_SILENCE": "off", "KOKORO_FIRST_FRAGMENT_WORDS": "off"}


def ms(samples: int) -> float:
    return samples * 1000 / limits.SAMPLE_RATE


def audio_measures(session: SessionAudio) -> tuple[float, float, float]:
    """Leading silence (ms), longest silence inside the reply (ms), audio length (s)."""
    audio = pcm16_to_float(session.pcm)
    first = first_audible_sample(audio) or 0
    gaps = [end - start for start, end in silences(audio)]
    return ms(first), ms(max(gaps, default=0)), len(audio) / limits.SAMPLE_RATE


async def solo(on_url: str, off_url: str, replies: list[str]) -> list[list[object]]:
    await speak_session(on_url, ["Warm up."])
    await speak_session(off_url, ["Warm up."])
    rows: list[list[object]] = []
    ratios: dict[str, list[float]] = {"on": [], "off": []}
    leads: dict[str, list[float]] = {"on": [], "off": []}
    inner: dict[str, list[float]] = {"on": [], "off": []}
    firsts: dict[str, list[float]] = {"on": [], "off": []}
    lengths: dict[str, list[float]] = {"on": [], "off": []}
    for reply in replies:
        sentences = split_sentences(reply)
        for name, url in (("on", on_url), ("off", off_url)):
            session = await speak_session(url, sentences)
            lead, longest, length = audio_measures(session)
            firsts[name].append(session.first_sound_s)
            ratios[name].append(session.first_sound_s / session.done_s)
            leads[name].append(lead)
            inner[name].append(longest)
            lengths[name].append(length)
        print(
            f"reply {len(firsts['on'])}: first sound on {firsts['on'][-1]:.2f} s (ratio {ratios['on'][-1]:.3f}), "
            f"off {firsts['off'][-1]:.2f} s (ratio {ratios['off'][-1]:.3f}); leading on {leads['on'][-1]:.0f} ms, "
            f"off {leads['off'][-1]:.0f} ms; longest inner on {inner['on'][-1]:.0f} ms, off {inner['off'][-1]:.0f} ms",
            flush=True,
        )
    for name in ("on", "off"):
        rows.append(
            [
                f"policies {name}",
                median(firsts[name]) * 1000,
                median(ratios[name]),
                max(ratios[name]),
                median(leads[name]),
                max(leads[name]),
                median(inner[name]),
                max(inner[name]),
                sum(lengths[name]),
            ]
        )
    return rows


async def crowd(url: str, sessions: list[list[str]]) -> tuple[list[SessionAudio], float]:
    start = time.perf_counter()
    results = await asyncio.gather(*(speak_session(url, pieces) for pieces in sessions))
    return list(results), time.perf_counter() - start


async def alone(url: str, sessions: list[list[str]]) -> list[str]:
    return [hashlib.sha256((await speak_session(url, pieces)).pcm).hexdigest() for pieces in sessions]


def concurrency_sessions(count: int, requests: int) -> list[list[str]]:
    chosen = [r for r in REPLIES if len(split_sentences(r)) >= 2]
    out = []
    for i in range(count):
        sentences = split_sentences(chosen[i % len(chosen)])
        sentences += split_sentences(chosen[(i + 1) % len(chosen)])
        out.append(sentences[:requests])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="12 replies, one concurrency round")
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--requests", type=int, default=3)
    parser.add_argument("--skip-solo", action="store_true")
    parser.add_argument("--replies", type=int, default=None, help="corpus replies in the solo part")
    args = parser.parse_args()
    replies = list(REPLIES[: args.replies or (12 if args.quick else len(REPLIES))])
    sessions = concurrency_sessions(args.sessions, args.requests)
    began = time.perf_counter()
    with run_server(timeout_s=STARTUP_S) as server:
        asyncio.run(speak_session(server.ws_url, ["Warm up."]))
        server_runs, server_wall = asyncio.run(crowd(server.ws_url, sessions))
        solo_hashes = asyncio.run(alone(server.ws_url, sessions))
    with run_baseline(timeout_s=STARTUP_S) as baseline:
        asyncio.run(speak_session(baseline.ws_url, ["Warm up."]))
        base_runs, base_wall = asyncio.run(crowd(baseline.ws_url, sessions))
    crowd_hashes = [hashlib.sha256(s.pcm).hexdigest() for s in server_runs]
    same = sum(a == b for a, b in zip(crowd_hashes, solo_hashes, strict=True))
    server_first = [s.first_sound_s for s in server_runs]
    base_first = [s.first_sound_s for s in base_runs]
    server_req = [r.first_sound_s for s in server_runs for r in s.requests if r.first_sound_s is not None]
    base_req = [r.first_sound_s for s in base_runs for r in s.requests if r.first_sound_s is not None]
    rows = [
        [
            "kokoro-server (defaults)",
            percentile(server_first, 0.5) * 1000,
            percentile(server_first, 0.95) * 1000,
            percentile(server_req, 0.95) * 1000,
            server_wall,
            f"{same}/{len(sessions)} identical to solo",
        ],
        [
            "baseline (whole request, global lock)",
            percentile(base_first, 0.5) * 1000,
            percentile(base_first, 0.95) * 1000,
            percentile(base_req, 0.95) * 1000,
            base_wall,
            "",
        ],
        [
            "ratio server / baseline",
            percentile(server_first, 0.5) / percentile(base_first, 0.5),
            percentile(server_first, 0.95) / percentile(base_first, 0.95),
            percentile(server_req, 0.95) / percentile(base_req, 0.95),
            server_wall / base_wall,
            "",
        ],
    ]
    print_table(
        f"{args.sessions} sessions x {args.requests} pipelined requests: each session's first sound",
        ["server", "first sound p50 ms", "first sound p95 ms", "per-request p95 ms", "wall s", "PCM"],
        rows,
    )
    if not args.skip_solo:
        with run_server(timeout_s=STARTUP_S) as server, run_server(env=POLICIES_OFF, timeout_s=STARTUP_S) as off:
            solo_rows = asyncio.run(solo(server.ws_url, off.ws_url, replies))
        print_table(
            f"Solo, {len(replies)} corpus replies, sentences as separate requests on one session (medians; max)",
            [
                "server",
                "first sound ms",
                "first sound / whole reply",
                "max ratio",
                "leading silence ms",
                "max leading",
                "longest inner silence ms",
                "max inner",
                "total audio s",
            ],
            solo_rows,
        )
    print(f"\nbench ran {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
