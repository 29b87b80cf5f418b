"""Streamed (chunked decoder) vs whole-segment audio over the corpus: does streaming sound the same?

Per corpus reply (first planned segment, default voice, the real int8 model): the log-mel distance and SNR between
the chunked decode and the whole-segment decode, and the largest sample step at chunk seams against the largest
inside chunks.
``--wer`` adds Whisper-base WER over the corpus, streamed vs whole (tests/asr_support.py, offline).

    uv run python bench/bench_streaming_quality.py [--wer] [--margin 16] [--first 12] [--later 48]
"""

from __future__ import annotations

import argparse
import statistics
import sys

import numpy as np
from bench_intelligibility import load_asr_support
from benchlib import print_table
from corpus import REPLIES

from kokoro_server.engines import EngineConfig, load_engine
from kokoro_server.engines.chunk_plan import ChunkSchedule
from kokoro_server.engines.onnx_synth import OnnxSynthesizer
from kokoro_server.pcm import float_to_pcm16
from kokoro_server.stream_quality import log_mel_distance, seam_jumps, snr_db


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wer", action="store_true", help="also Whisper WER, streamed vs whole")
    parser.add_argument("--margin", type=int, default=ChunkSchedule().margin_frames)
    parser.add_argument("--first", type=int, default=ChunkSchedule().first_frames)
    parser.add_argument("--later", type=int, default=ChunkSchedule().later_frames)
    parser.add_argument("--replies", type=int, default=len(REPLIES))
    args = parser.parse_args(argv)
    engine = load_engine(EngineConfig(threads=2))
    synth = engine._synthesizer
    assert isinstance(synth, OnnxSynthesizer)
    synth.schedule = ChunkSchedule(first_frames=args.first, later_frames=args.later, margin_frames=args.margin)
    voice = engine.default_voice
    rows = []
    whole_pcm: list[bytes] = []
    streamed_pcm: list[bytes] = []
    texts: list[str] = []
    for text in REPLIES[: args.replies]:
        segment = engine.plan(text, voice=voice, speed=1.0)[0]
        whole = engine.render(segment, voice=voice, speed=1.0)
        chunks = list(engine.render_stream(segment, voice=voice, speed=1.0).chunks)
        streamed = np.concatenate(chunks)
        seams = list(np.cumsum([len(c) for c in chunks])[:-1])
        seam, inside = seam_jumps(streamed, seams)
        rows.append(
            (len(segment.tokens), len(chunks), log_mel_distance(whole, streamed), snr_db(whole, streamed), seam, inside)
        )
        whole_pcm.append(float_to_pcm16(whole))
        streamed_pcm.append(float_to_pcm16(streamed))
        texts.append(segment.text)
    print_table(
        f"streamed vs whole: first {args.first} frames, later {args.later}, margin {args.margin} (25 ms frames)",
        ("tokens", "chunks", "log-mel dist", "SNR dB", "max seam step", "max inside step"),
        [(t, c, f"{d:.3f}", f"{s:.1f}", f"{a:.4f}", f"{b:.4f}") for t, c, d, s, a, b in rows],
    )
    dists = [r[2] for r in rows]
    ratio = [r[4] / r[5] for r in rows if r[5] > 0]
    print(f"log-mel distance: median {statistics.median(dists):.3f}, max {max(dists):.3f}")
    print(f"SNR dB: median {statistics.median(r[3] for r in rows):.1f}, min {min(r[3] for r in rows):.1f}")
    print(f"seam step / inside step: median {statistics.median(ratio):.3f}, max {max(ratio):.3f}")
    if args.wer:
        asr = load_asr_support()
        model = asr.load_whisper()
        hear = [asr.transcribe(model, pcm) for pcm in whole_pcm]
        hear_s = [asr.transcribe(model, pcm) for pcm in streamed_pcm]
        wer_whole = asr.word_error_rate(texts, hear)
        wer_stream = asr.word_error_rate(texts, hear_s)
        print(
            f"Whisper-base WER over {len(texts)} segments: whole {wer_whole:.4f}, streamed {wer_stream:.4f}, "
            f"difference {wer_stream - wer_whole:+.4f} (target <= +0.005)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
