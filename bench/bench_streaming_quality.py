"""Streamed (chunked decoder) vs whole-segment audio over the corpus: does streaming sound the same?

Per corpus reply (first planned segment, default voice, the real int8 model), two streamed arms against the
whole-segment decode, side by side: the engine's schedule (or the one the options give) and the same schedule with
``--versus-lead-context`` (default ``all``: every frame of the model's leading padding decoded, as before the first
chunk skipped it). Measured on what a listener hears, from the whole decode's first audible sample less the silence
policy's 10 ms (the padding before it is trimmed either way): the log-mel distance and SNR to the whole decode, the
largest sample step at chunk seams against the largest inside chunks, and the first window's decoder time.
``--wer`` adds Whisper-base WER of the three over the segments (``--wer-corpus``: the 83 WER replies), each arm
paired against the whole decode with a 95 % bootstrap interval (bench/wer_stats.py).

    uv run python bench/bench_streaming_quality.py [--wer] [--wer-corpus] [--versus-lead-context all]
        [--margin 32] [--first 12] [--later 48] [--growth 2] [--lead-context 4]
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
import time

import numpy as np
import numpy.typing as npt
from bench_intelligibility import load_asr_support
from benchlib import print_table
from corpus import REPLIES, WER_REPLIES
from stream_options import engine_with_schedule, schedule_of, schedule_parser
from wer_stats import edits_per_text, paired_difference

from kokoro_server.engines import Engine, Segment
from kokoro_server.engines.onnx_synth import OnnxSynthesizer
from kokoro_server.pcm import float_to_pcm16
from kokoro_server.silence import SilencePolicy, first_audible_sample
from kokoro_server.stream_quality import log_mel_distance, seam_jumps, snr_db

Audio = npt.NDArray[np.float32]


@dataclasses.dataclass
class Arm:
    """One streamed arm: its per-segment measures and audio."""

    name: str
    log_mel: list[float] = dataclasses.field(default_factory=list)
    snr: list[float] = dataclasses.field(default_factory=list)
    seam_ratio: list[float] = dataclasses.field(default_factory=list)
    first_window_s: list[float] = dataclasses.field(default_factory=list)
    pcm: list[bytes] = dataclasses.field(default_factory=list)


def streamed(engine: Engine, segment: Segment, voice: str) -> tuple[list[Audio], float]:
    """The segment's chunks and the time from the request to the first chunk (front end + first window)."""
    start = time.perf_counter()
    chunks = engine.render_stream(segment, voice=voice, speed=1.0).chunks
    first = next(chunks)
    elapsed = time.perf_counter() - start
    return [first, *chunks], elapsed


def main(argv: list[str] | None = None) -> int:
    parser = schedule_parser(__doc__.splitlines()[0])
    parser.add_argument("--wer", action="store_true", help="also Whisper WER, each arm vs whole")
    parser.add_argument("--wer-corpus", action="store_true", help="the 83 WER replies instead of the 34")
    parser.add_argument(
        "--versus-lead-context",
        type=lambda value: None if value == "all" else int(value),
        default=None,
        help="the second arm's leading-padding frames decoded ('all': every one)",
    )
    args = parser.parse_args(argv)
    engine = engine_with_schedule(args)
    synth = engine._synthesizer
    assert isinstance(synth, OnnxSynthesizer)
    schedules = {
        f"lead context {args.lead_context}": synth.schedule,
        f"lead context {args.versus_lead_context or 'all'}": dataclasses.replace(
            synth.schedule, lead_context_frames=args.versus_lead_context
        ),
    }
    arms = {name: Arm(name) for name in schedules}
    voice = engine.default_voice
    keep_head = round(SilencePolicy().keep_head_ms * engine.sample_rate / 1000)
    corpus = WER_REPLIES if args.wer_corpus else REPLIES
    texts: list[str] = []
    whole_pcm: list[bytes] = []
    for index, text in enumerate(corpus[: args.replies]):
        segment = engine.plan(text, voice=voice, speed=1.0)[0]
        whole = engine.render(segment, voice=voice, speed=1.0)
        heard = max(0, (first_audible_sample(whole, engine.sample_rate) or 0) - keep_head)
        names = list(schedules)
        for name in names[index % 2 :] + names[: index % 2]:  # alternate which arm runs first
            synth.schedule = schedules[name]
            chunks, first_s = streamed(engine, segment, voice)
            audio = np.concatenate(chunks)
            arm = arms[name]
            seam, inside = seam_jumps(audio[heard:], [s - heard for s in np.cumsum([len(c) for c in chunks])[:-1]])
            arm.log_mel.append(log_mel_distance(whole[heard:], audio[heard:]))
            arm.snr.append(snr_db(whole[heard:], audio[heard:]))
            arm.seam_ratio.append(seam / inside if inside > 0 else 0.0)
            arm.first_window_s.append(first_s)
            arm.pcm.append(float_to_pcm16(audio[heard:]))
        whole_pcm.append(float_to_pcm16(whole[heard:]))
        texts.append(segment.text)
    print_table(
        f"streamed vs whole over {len(texts)} first segments, on what a listener hears; {schedule_of(engine)}",
        (
            "arm",
            "log-mel median (max)",
            "SNR dB median (min)",
            "seam step / inside step, median (max)",
            "front end + first window ms, median",
        ),
        [
            (
                arm.name,
                f"{statistics.median(arm.log_mel):.3f} ({max(arm.log_mel):.3f})",
                f"{statistics.median(arm.snr):.1f} ({min(arm.snr):.1f})",
                f"{statistics.median(arm.seam_ratio):.3f} ({max(arm.seam_ratio):.3f})",
                f"{statistics.median(arm.first_window_s) * 1000:.0f}",
            )
            for arm in arms.values()
        ],
    )
    if args.wer:
        asr = load_asr_support()
        model = asr.load_whisper()
        words = [len(asr.normalise(text)) for text in texts]

        def edits(pcm: list[bytes]) -> list[int]:
            return edits_per_text(texts, [asr.transcribe(model, p) for p in pcm], asr.word_error_rate, words)

        whole_edits = edits(whole_pcm)
        print_table(
            f"Whisper-base WER over {len(texts)} first segments ({sum(words)} words), each arm vs the whole decode; "
            "paired, 95 % bootstrap interval (target <= +0.005)",
            ("arm", "WER whole", "WER streamed", "streamed - whole", "95 % interval"),
            [(arm.name, *paired_difference(words, whole_edits, edits(arm.pcm)).row()) for arm in arms.values()],
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
