"""Intelligibility and word-timing agreement over the corpus, measured with Whisper (issues 12 and 13).

For each reply of bench/corpus.py, spoken as a fresh session's request (the container's path: ScheduledSpeech on a
Scheduler, with a WordTimer for the word timings), and again with every speech policy off (silence trim and
pauses, first fragment: ``kokoro_server.policy.RAW``), Whisper base (faster-whisper, int8, CPU; the model joined
from the PyPI parts by tests/asr_support.py, nothing downloaded) transcribes both:

- **WER** with the policies on vs off, summed over the replies (numbers, units and spellings normalised by
  ``asr_support.normalise``). Issue 12's target: on <= off + 0.01.
- **Agreement** of the container's word timings (policies on, on the request's audio timeline) with Whisper's
  word timestamps: start-time differences (Whisper minus container) on the words both give, matched after
  normalising; median and p90 of the absolute difference, and the signed median (bias). Issue 13's target: median
  <= 100 ms.
- **Onsets**: where a word follows at least 100 ms of silence (under -40 dBFS) in the audio, the sound's onset is
  known without either side; the container's and Whisper's start of that word are both compared with it, which
  says which side a disagreement comes from.

Usage: ``python bench/bench_intelligibility.py [--sample] [--replies N] [--engine onnx|torch] [--agreement-only]
[--no-cut] [--unfitted-starts]`` (``--no-cut``: also the silence policy alone, to tell which policy a WER
difference comes from; ``--sample``: the four replies of ``corpus.ASR_SAMPLE`` only; ``--unfitted-starts``: the word
timings as they were before ``fit_starts_to_sound``). The whole corpus takes a few minutes on a quiet
2-core machine.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from benchlib import percentile, print_table
from corpus import ASR_SAMPLE, REPLIES

from kokoro_server import word_timings
from kokoro_server.captioned import speak_timed
from kokoro_server.engines import EngineConfig, load_engine
from kokoro_server.engines.speech_engine import SpeechEngine
from kokoro_server.policy import RAW, SpeechPolicy
from kokoro_server.scheduled_speech import speak_offline
from kokoro_server.scheduler import Scheduler
from kokoro_server.silence import pcm16_to_float, silences

TARGET_WER_MARGIN = 0.01
TARGET_MEDIAN_S = 0.100
NO_CUT = SpeechPolicy(first_fragment_words=None)
"""The server's policy without the first-fragment cut (trims, pauses and the streamed first sound)."""
PAUSE_S = 0.1
"""A silence at least this long makes the onset after it a reference point."""


def load_asr_support() -> ModuleType:
    """tests/asr_support.py, loaded by path (tests/ is not a package)."""
    path = Path(__file__).resolve().parents[1] / "tests" / "asr_support.py"
    spec = importlib.util.spec_from_file_location("asr_support", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["asr_support"] = module
    spec.loader.exec_module(module)
    return module


def timed_speech(engine: SpeechEngine, scheduler: Scheduler, text: str) -> tuple[bytes, list[Any]]:
    """The PCM and word timings a fresh WebSocket/HTTP request gets for ``text`` (server defaults)."""
    spoken = asyncio.run(speak_timed(engine, scheduler, text=text, request_id="bench"))
    return spoken.pcm, list(spoken.words)


def _unfitted(
    spans: Sequence[tuple[int, int]], audio: Any, *, sample_rate: int, previous_end: int = 0
) -> list[tuple[int, int]]:
    return list(spans)


def onset_offsets(pcm: bytes, pairs: list[tuple[Any, Any]], sample_rate: int) -> list[tuple[float, float]]:
    """For each onset after a pause of at least :data:`PAUSE_S`: (container start - onset, Whisper start - onset)
    of the word sounding from there (the first matched word that ends after the onset, if it starts within
    0.2 s of it)."""
    offsets: list[tuple[float, float]] = []
    for start, end in silences(pcm16_to_float(pcm), sample_rate):
        if (end - start) / sample_rate < PAUSE_S:
            continue
        onset = end / sample_rate
        word = next(((mine, other) for mine, other in pairs if mine.end_s > onset), None)
        if word is not None and abs(word[0].start_s - onset) <= 0.2:
            offsets.append((word[0].start_s - onset, word[1].start_s - onset))
    return offsets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", action="store_true", help="only the replies of corpus.ASR_SAMPLE")
    parser.add_argument("--replies", type=int, default=None, help="only the first N corpus replies")
    parser.add_argument("--engine", choices=["onnx", "torch"], default="onnx")
    parser.add_argument("--agreement-only", action="store_true", help="skip the policies-off rendering and WER")
    parser.add_argument(
        "--no-cut",
        action="store_true",
        help="also the silence policy alone (no first-fragment cut): which policy a WER difference comes from",
    )
    parser.add_argument(
        "--unfitted-starts",
        action="store_true",
        help="word timings without word_timings.fit_starts_to_sound (the figures before that fix)",
    )
    args = parser.parse_args()
    asr = load_asr_support()
    if args.unfitted_starts:
        word_timings.fit_starts_to_sound = _unfitted
    indices = list(ASR_SAMPLE) if args.sample else list(range(len(REPLIES)))[: args.replies]
    engine = load_engine(EngineConfig(engine=args.engine, device="cpu"))
    whisper = asr.load_whisper()
    scheduler = Scheduler(workers=1, name="bench")
    references: list[str] = []
    heard_on: list[str] = []
    heard_off: list[str] = []
    heard_no_cut: list[str] = []
    differences: list[float] = []
    onsets: list[tuple[float, float]] = []
    rows: list[list[object]] = []
    started = time.perf_counter()
    for index in indices:
        text = REPLIES[index]
        pcm_on, words = timed_speech(engine, scheduler, text)
        text_on, recognised = asr.transcribe_words(whisper, pcm_on, engine.sample_rate)
        pairs = asr.matched_words([asr.TimedWord(w.word, w.start_s, w.end_s) for w in words], recognised)
        reply_differences = [other.start_s - mine.start_s for mine, other in pairs]
        differences.extend(reply_differences)
        onsets.extend(onset_offsets(pcm_on, pairs, engine.sample_rate))
        references.append(text)
        heard_on.append(text_on)
        row: list[object] = [index, asr.word_error_rate([text], [text_on])]
        if not args.agreement_only:
            pcm_off = speak_offline(engine, text, policy=RAW)
            heard_off.append(asr.transcribe(whisper, pcm_off, engine.sample_rate))
            row.append(asr.word_error_rate([text], [heard_off[-1]]))
        if args.no_cut:
            pcm_no_cut = speak_offline(engine, text, policy=NO_CUT)
            heard_no_cut.append(asr.transcribe(whisper, pcm_no_cut, engine.sample_rate))
            row.append(asr.word_error_rate([text], [heard_no_cut[-1]]))
            print(f"reply {index}: no cut {heard_no_cut[-1]!r}")
        absolute = [abs(d) * 1000 for d in reply_differences]
        row += [len(reply_differences), statistics.median(absolute) if absolute else float("nan")]
        rows.append(row)
        print(f"reply {index}: on {text_on!r}" + ("" if args.agreement_only else f" | off {heard_off[-1]!r}"))
    elapsed = time.perf_counter() - started
    header = ["reply", "WER on"] + ([] if args.agreement_only else ["WER off"])
    header += ["WER no cut"] * args.no_cut + ["words timed", "median |d| ms"]
    print_table(f"Whisper base on {len(indices)} corpus replies, {args.engine} engine", header, rows)
    print()
    wer_on = asr.word_error_rate(references, heard_on)
    if not args.agreement_only:
        wer_off = asr.word_error_rate(references, heard_off)
        met = "met" if wer_on <= wer_off + TARGET_WER_MARGIN else "MISSED"
        print(
            f"WER policies on {wer_on:.3f} vs off {wer_off:.3f}: on - off = {wer_on - wer_off:+.3f} "
            f"(target <= +{TARGET_WER_MARGIN}: {met})"
        )
    else:
        print(f"WER policies on {wer_on:.3f}")
    if args.no_cut:
        wer_no_cut = asr.word_error_rate(references, heard_no_cut)
        print(
            f"WER silence policy alone (no first-fragment cut) {wer_no_cut:.3f}: "
            f"on - no cut = {wer_on - wer_no_cut:+.3f}"
        )
    absolute = [abs(d) for d in differences]
    median = statistics.median(absolute)
    met = "met" if median <= TARGET_MEDIAN_S else "MISSED"
    print(
        f"Word start agreement, {args.engine} engine, {len(differences)} words: median |whisper - container| "
        f"{median * 1000:.0f} ms, p90 {percentile(absolute, 0.9) * 1000:.0f} ms, signed median "
        f"{statistics.median(differences) * 1000:+.0f} ms (target median <= {TARGET_MEDIAN_S * 1000:.0f} ms: {met})"
    )
    if onsets:
        print(
            f"At {len(onsets)} onsets after a pause of >= {PAUSE_S * 1000:.0f} ms: container start - onset median "
            f"{statistics.median(o[0] for o in onsets) * 1000:+.0f} ms, Whisper start - onset median "
            f"{statistics.median(o[1] for o in onsets) * 1000:+.0f} ms"
        )
    print(f"({elapsed:.0f} s)")
    scheduler.shutdown()


if __name__ == "__main__":
    main()
