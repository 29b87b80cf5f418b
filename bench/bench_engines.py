"""The engines side by side on this CPU: front end and decoder time per segment, int8 ONNX vs fp32 ONNX vs torch.

Issue 21 asks which engine is fastest at equal WER, measured here rather than taken from reports (several measure
int8 ONNX slower than fp32 on x86). Every corpus reply is planned once (``WER_REPLIES``' first ``--replies``); for
each segment, in one run and in rotating order:

- the front ends: the int8 graph's (the shipped ONNX model, cut at its decoder) and torch's (``KModel`` on the
  weights converted from that model: ``torch_synth.front_end``);
- the decoders, all fed the int8 front end's outputs, so they decode the very same inputs: the int8 graph's
  decoder, an fp32 ONNX decoder exported here from the converted ``KModel`` (``torch.onnx.export``, dynamic time
  axis, cached under ``$KOKORO_RELAY_CACHE``; nothing from a model hub), and torch's ``torch_synth.decode``.

Every engine runs with the server's threads (``--threads``, default 2: intra-op threads for ONNX Runtime and
``torch.set_num_threads``). Then Whisper base hears each decoder's whole-segment audio (``--wer``) so the speed is
compared at measured WER. The converted weights are the int8 model's dequantized, so "fp32" here is fp32
arithmetic on the same weights the int8 engine has.

    uv run python bench/bench_engines.py [--replies 20] [--threads 2] [--wer]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
import torch
from benchlib import print_table
from corpus import WER_REPLIES
from kokoro.model import KModel
from wer_stats import edits_per_text, paired_difference

from kokoro_server.convert import ensure_converted_weights
from kokoro_server.convert.store import converted_weights_path
from kokoro_server.engines import EngineConfig, load_engine
from kokoro_server.engines.base import FRAME_SAMPLES, SAMPLE_RATE
from kokoro_server.engines.onnx_split import ASR, DECODER_INPUTS, F0, SOURCE, N
from kokoro_server.engines.onnx_synth import OnnxSynthesizer
from kokoro_server.engines.torch_synth import REPO_ID, decode, front_end, read_config, weights_files

FP32_INPUTS = ("asr", "f0", "energy", "source", "style")
ENGINES = ("int8 onnx", "fp32 onnx", "torch fp32")


class _Decoder(torch.nn.Module):
    """``torch_synth.decode`` as a module, for the exporter."""

    def __init__(self, model: KModel) -> None:
        super().__init__()
        self.model = model

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        asr, f0, energy, source, style = inputs
        return decode(self.model, asr=asr, f0=f0, energy=energy, source=source, style=style)


def load_kmodel(*, export_friendly: bool) -> KModel:
    """The converted weights in ``KModel`` (``disable_complex``: the STFT as convolutions, which ONNX exports)."""
    config_path, checkpoint = weights_files(ensure_converted_weights())
    model = KModel(
        repo_id=REPO_ID, config=read_config(config_path), model=str(checkpoint), disable_complex=export_friendly
    )
    return model.eval()


def fp32_decoder_path() -> Path:
    """Export the converted model's decoder to fp32 ONNX once (cached beside the converted weights)."""
    weights = converted_weights_path()
    path = weights.with_name(f"{weights.name}-decoder-fp32.onnx")
    if path.is_file():
        return path
    frames = 60
    example = (
        torch.randn(1, 512, frames),
        torch.rand(1, 2 * frames) * 200,
        torch.randn(1, 2 * frames),
        torch.randn(1, FRAME_SAMPLES * frames, 1) * 0.1,
        torch.randn(1, 128),
    )
    started = time.perf_counter()
    torch.onnx.export(
        _Decoder(load_kmodel(export_friendly=True)),
        example,
        str(path),
        dynamo=False,
        opset_version=17,
        input_names=list(FP32_INPUTS),
        output_names=["audio"],
        dynamic_axes={"asr": {2: "frames"}, "f0": {1: "f0"}, "energy": {1: "f0"}, "source": {1: "samples"}},
    )
    print(f"exported the fp32 decoder to {path} in {time.perf_counter() - started:.1f} s", flush=True)
    return path


def timed[T](work: Callable[[], T]) -> tuple[T, float]:
    started = time.perf_counter()
    result = work()
    return result, (time.perf_counter() - started) * 1000


@dataclass(frozen=True)
class DecoderInputs:
    """One segment's decoder inputs, as the int8 front end gives them (``style``: the whole 256-wide row)."""

    asr: npt.NDArray[np.float32]
    f0: npt.NDArray[np.float32]
    energy: npt.NDArray[np.float32]
    source: npt.NDArray[np.float32]
    style: npt.NDArray[np.float32]


class Engines:
    """The three engines' front ends and decoders on this machine's threads."""

    def __init__(self, threads: int) -> None:
        torch.set_num_threads(threads)
        self.engine = load_engine(EngineConfig(threads=threads))
        synth = self.engine._synthesizer
        assert isinstance(synth, OnnxSynthesizer)
        assert synth._front is not None
        assert synth._decoder is not None
        assert synth._split is not None
        self.synth, self.front, self.int8, self.split = synth, synth._front, synth._decoder, synth._split
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.enable_mem_pattern = False
        path = str(fp32_decoder_path())
        self.fp32 = ort.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])
        self.kmodel = load_kmodel(export_friendly=False)

    def onnx_front_end(self, tokens: tuple[int, ...], style: npt.NDArray[np.float32]) -> DecoderInputs:
        inputs = self.synth._inputs
        feeds = {
            inputs.tokens: np.array([[0, *tokens, 0]], dtype=np.int64),
            inputs.style: style,
            inputs.speed: np.array([1.0], dtype=inputs.speed_type),
        }
        asr, f0, energy, source = self.front.run([*DECODER_INPUTS], feeds)
        return DecoderInputs(asr, f0, energy, source, style)

    def torch_front_end(self, tokens: tuple[int, ...], style: npt.NDArray[np.float32]) -> None:
        with torch.inference_mode():
            front_end(self.kmodel, torch.tensor([[0, *tokens, 0]]), torch.from_numpy(style), 1.0)

    def decode(self, name: str, x: DecoderInputs) -> npt.NDArray[np.float32]:
        if name == "int8 onnx":
            feeds = {ASR: x.asr, F0: x.f0, N: x.energy, SOURCE: x.source, self.split.style_input: x.style}
            out = self.int8.run([self.split.audio_output], feeds)[0]
        elif name == "fp32 onnx":
            values = (x.asr, x.f0, x.energy, x.source, x.style[:, :128])
            out = self.fp32.run(None, dict(zip(FP32_INPUTS, values, strict=True)))[0]
        else:
            with torch.inference_mode():
                out = decode(
                    self.kmodel,
                    asr=torch.from_numpy(x.asr),
                    f0=torch.from_numpy(x.f0),
                    energy=torch.from_numpy(x.energy),
                    source=torch.from_numpy(x.source),
                    style=torch.from_numpy(x.style[:, :128]),
                ).numpy()
        return np.asarray(out, dtype=np.float32).reshape(-1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replies", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--wer", action="store_true", help="Whisper WER of each decoder's audio")
    args = parser.parse_args(argv)
    engines = Engines(args.threads)
    engine = engines.engine
    pack = engine._voices.resolve(engine.default_voice)
    texts = [t for t in WER_REPLIES[: args.replies] if len(t.split()) > 1]
    front_ms: dict[str, list[float]] = {"int8 onnx": [], "torch fp32": []}
    decoder_ms: dict[str, list[float]] = {name: [] for name in ENGINES}
    frames_seen: list[int] = []
    audio: dict[str, list[list[npt.NDArray[np.float32]]]] = {name: [[] for _ in texts] for name in ENGINES}
    for warm in (True, False):
        for t, text in enumerate(texts[:1] if warm else texts):
            for s, segment in enumerate(engine.plan(text, voice=engine.default_voice, speed=1.0)):
                style = engine._voices.style_for(pack, len(segment.tokens)).reshape(1, -1).astype(np.float32)
                inputs, onnx_front = timed(partial(engines.onnx_front_end, segment.tokens, style))
                _, torch_front = timed(partial(engines.torch_front_end, segment.tokens, style))
                rotation = s % len(ENGINES)
                for name in ENGINES[rotation:] + ENGINES[:rotation]:
                    result, ms = timed(partial(engines.decode, name, inputs))
                    if not warm:
                        decoder_ms[name].append(ms)
                        audio[name][t].append(result)
                if not warm:
                    front_ms["int8 onnx"].append(onnx_front)
                    front_ms["torch fp32"].append(torch_front)
                    frames_seen.append(int(inputs.asr.shape[2]))
        print("warmed up" if warm else "measured", flush=True)

    base = statistics.median(decoder_ms["int8 onnx"])
    rows = []
    for name in ENGINES:
        per_frame = sum(decoder_ms[name]) / sum(frames_seen)
        front = statistics.median(front_ms.get(name, front_ms["int8 onnx"]))
        rows.append(
            (
                name,
                f"{front:.0f}" + ("" if name in front_ms else " (int8's)"),
                f"{statistics.median(decoder_ms[name]):.0f}",
                f"{per_frame:.2f}",
                f"{statistics.median(decoder_ms[name]) / base:.2f}",
            )
        )
    print_table(
        f"{len(frames_seen)} segments of {len(texts)} replies (median {statistics.median(frames_seen):.0f} frames of "
        f"25 ms), {args.threads} threads; decoders fed the same int8 front-end outputs",
        ("engine", "front end ms (median)", "decoder ms (median)", "decoder ms per frame", "decoder / int8"),
        rows,
    )
    if args.wer:
        report_wer(texts, audio)
    return 0


def report_wer(texts: list[str], audio: dict[str, list[list[npt.NDArray[np.float32]]]]) -> None:
    """Whisper base on each engine's replies (its segments joined), paired against the int8 engine."""
    from bench_intelligibility import load_asr_support  # noqa: PLC0415 - Whisper only with --wer

    asr = load_asr_support()
    model = asr.load_whisper()
    words = [len(asr.normalise(text)) for text in texts]
    edits = {}
    for name in ENGINES:
        heard = []
        for parts in audio[name]:
            joined = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
            pcm = (np.clip(joined, -1.0, 1.0) * 32767).astype(np.int16).tobytes()
            heard.append(asr.transcribe(model, pcm, SAMPLE_RATE))
        edits[name] = edits_per_text(texts, heard, asr.word_error_rate, words)
    rows = []
    for name in ENGINES[1:]:
        result = paired_difference(words, edits["int8 onnx"], edits[name])
        rows.append((f"{name} vs int8 onnx", *result.row()))
    print_table(
        f"Whisper-base WER over {len(texts)} replies ({sum(words)} words), whole-segment decodes; 95 % bootstrap "
        "interval of the paired difference",
        ("comparison", "WER int8", "WER other", "other - int8", "95 % interval"),
        rows,
    )


if __name__ == "__main__":
    sys.exit(main())
