"""Torch engine throughput: time to first audio at 1 session, audio-seconds per second at N sessions.

KModel with the weights converted from the int8 ONNX (or --weights DIR), on --device (cuda on a GPU
machine), per precision: fp32, and bf16/fp16 autocast (ops without a half kernel, like the STFT,
stay fp32). Each session is a thread that speaks the reference text's sentences one after another
(sequential per session, as the server does); sessions share one model. Then streaming within a segment on and
off (issue 21) through the server's torch engine (fp32, the same ``ChunkSchedule`` as the CPU): per corpus reply,
its first segment's time to the first decoded chunk (front end + first window, what ``KOKORO_STREAM_DECODER=on``
waits for) against the whole segment's render (what ``off`` waits for), and the streamed segment's total time.
Prints Markdown tables. ``--smoke`` runs small numbers on CPU so the script itself is verified without a GPU.
"""

from __future__ import annotations

import argparse
import threading
import time
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import torch
from benchlib import REFERENCE_TEXT, median, percentile, print_table
from corpus import REPLIES

from kokoro_server.convert import ensure_converted_weights
from kokoro_server.convert.verify import load_kmodel
from kokoro_server.engines import EngineConfig, load_engine
from kokoro_server.engines.voices import VoiceBank
from relay_core.text.segmenter import split_sentences

VOICE = "jf_alpha"
SAMPLE_RATE = 24_000
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


class Speaker:
    """KModel on a device + the engine's G2P/voices for tokens and styles."""

    def __init__(self, weights: Path, device: str, precision: str) -> None:
        self.engine = load_engine(EngineConfig(engine="onnx"))  # G2P and tokenizer only
        self.model: Any = load_kmodel(weights).to(device)
        if precision != "fp32":
            self._istft_in_fp32()
        self.device = device
        self.precision = precision
        self.segments = [self.engine.plan(s, voice=VOICE, speed=1.0)[0] for s in split_sentences(REFERENCE_TEXT)]
        self.voices = VoiceBank.from_pt_dir(weights / "voices")
        self.pack = self.voices.resolve(VOICE)

    def _istft_in_fp32(self) -> None:
        """The complex iSTFT has no half kernels: run it in fp32 outside autocast."""
        stft = self.model.decoder.generator.stft
        inverse = stft.inverse

        def fp32_inverse(magnitude: torch.Tensor, phase: torch.Tensor) -> torch.Tensor:
            with torch.autocast(device_type=self.device.split(":")[0], enabled=False):
                result: torch.Tensor = inverse(magnitude.float(), phase.float())
            return result

        stft.inverse = fp32_inverse

    def autocast(self) -> AbstractContextManager[Any]:
        if self.precision == "fp32":
            return nullcontext()
        return torch.autocast(device_type=self.device.split(":")[0], dtype=DTYPES[self.precision])

    def speak(self, index: int) -> float:
        """Synthesize segment ``index``; returns audio seconds (waits for the device)."""
        segment = self.segments[index % len(self.segments)]
        style = np.array(self.voices.style_for(self.pack, len(segment.tokens)), np.float32)
        ids = torch.tensor([[0, *segment.tokens, 0]], device=self.device)
        ref = torch.from_numpy(style.reshape(1, -1)).to(self.device)
        with torch.inference_mode(), self.autocast():
            audio, _ = self.model.forward_with_tokens(ids, ref, 1.0)
        return float(audio.float().cpu().numel()) / SAMPLE_RATE


def first_audio(speaker: Speaker, runs: int) -> tuple[float, float]:
    times = []
    for i in range(runs):
        started = time.perf_counter()
        speaker.speak(i)
        times.append(time.perf_counter() - started)
    return median(times), percentile(times, 0.95)


def throughput(speaker: Speaker, sessions: int, per_session: int) -> float:
    """Audio seconds produced per wall second with ``sessions`` concurrent sequential sessions."""
    produced = [0.0] * sessions

    def session(slot: int) -> None:
        for i in range(per_session):
            produced[slot] += speaker.speak(slot + i)

    threads = [threading.Thread(target=session, args=(s,)) for s in range(sessions)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(produced) / (time.perf_counter() - started)


def streaming_on_off(weights: Path, device: str, replies: int) -> list[list[object]]:
    """Per corpus reply's first segment, the torch engine's first chunk and whole render, alternating (seconds)."""
    engine = load_engine(EngineConfig(engine="torch", weights_dir=weights, device=device))
    segments = [engine.plan(text, voice=VOICE, speed=1.0)[0] for text in REPLIES[:replies]]
    for segment in segments[:2]:  # warm-up: kernels for both paths
        engine.render(segment, voice=VOICE, speed=1.0)
        list(engine.render_stream(segment, voice=VOICE, speed=1.0).chunks)
    first, whole, streamed = [], [], []
    for segment in segments:
        started = time.perf_counter()
        chunks = engine.render_stream(segment, voice=VOICE, speed=1.0).chunks
        next(chunks)  # numpy on the host: the device has finished this chunk
        first.append(time.perf_counter() - started)
        for _ in chunks:
            pass
        streamed.append(time.perf_counter() - started)
        started = time.perf_counter()
        engine.render(segment, voice=VOICE, speed=1.0)
        whole.append(time.perf_counter() - started)
    return [
        [
            len(segments),
            median(first) * 1000,
            median(whole) * 1000,
            median([f / w for f, w in zip(first, whole, strict=True)]),
            median([s / w for s, w in zip(streamed, whole, strict=True)]),
        ]
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--weights", type=Path, default=None, help="weights dir (default: converted cache)")
    parser.add_argument("--precisions", default="fp32,bf16,fp16")
    parser.add_argument("--sessions", default="1,8,32,64")
    parser.add_argument("--per-session", type=int, default=4, help="sentences each session speaks")
    parser.add_argument("--ttfa-runs", type=int, default=20)
    parser.add_argument("--stream-replies", type=int, default=len(REPLIES), help="replies for streaming on/off")
    parser.add_argument("--smoke", action="store_true", help="CPU, fp32+bf16, sessions 1,2, tiny counts")
    args = parser.parse_args()
    if args.smoke:
        args.device, args.precisions, args.sessions, args.per_session, args.ttfa_runs = "cpu", "fp32,bf16", "1,2", 1, 2
        args.stream_replies = 3
    weights = args.weights or ensure_converted_weights()
    name = (
        torch.cuda.get_device_name(0) if args.device.startswith("cuda") else f"cpu ({torch.get_num_threads()} threads)"
    )
    print(f"device: {name}; torch {torch.__version__}; weights {weights}")
    sessions = [int(s) for s in args.sessions.split(",")]
    ttfa_rows, rate_rows = [], []
    for precision in args.precisions.split(","):
        speaker = Speaker(weights, args.device, precision)
        for i in range(3 if not args.smoke else 1):
            speaker.speak(i)  # warm-up (kernel selection, allocator)
        p50, p95 = first_audio(speaker, args.ttfa_runs)
        ttfa_rows.append([precision, p50 * 1000, p95 * 1000])
        rates = [throughput(speaker, n, args.per_session) for n in sessions]
        rate_rows.append([precision, *rates])
        print(f"{precision}: TTFA p50 {p50 * 1000:.1f} ms; audio s/s {[round(r, 1) for r in rates]}", flush=True)
        del speaker
        if args.device.startswith("cuda"):
            torch.cuda.empty_cache()
    print_table(f"Time to first audio, 1 session ({name})", ["precision", "p50 ms", "p95 ms"], ttfa_rows)
    print_table(
        f"Audio seconds per second by concurrent sessions ({name})",
        ["precision", *[f"{n} sessions" for n in sessions]],
        rate_rows,
    )
    print_table(
        f"Streaming within a segment, torch engine fp32, first segments of corpus replies ({name})",
        [
            "segments",
            "first chunk ms (on), median",
            "whole segment ms (off), median",
            "first chunk / whole",
            "streamed segment / whole",
        ],
        streaming_on_off(weights, args.device, args.stream_replies),
    )


if __name__ == "__main__":
    main()
