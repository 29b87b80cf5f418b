"""Streaming configurations side by side: chunk schedules and norm-statistics injection, WER against whole decode.

Issue 21's question is which streamed decode sounds like the whole-segment decode. Per corpus reply (first
planned segment, default voice, the real int8 model) this decodes the segment whole once, then once per
configuration, and Whisper-base transcribes every result (tests/asr_support.py, offline). A configuration is
``NAME=margin:first:sizes[:inject]``:

- ``margin``: context frames each side of a window; ``first``: audible frames of the first chunk (after the leading
  padding), ``12`` or ``12%10`` (at least 12, and at least 10 % of the segment's frames); ``sizes``: the later
  chunks' frames, ``48`` (all equal), ``24*2`` (24, then doubling each chunk), or ``rest``: everything after the
  first chunk in one more decode of the *whole* segment (its audio after the first chunk is the whole decode's, bit
  for bit: a quick approximate head, then the exact rest);
- ``inject`` (optional, an oracle, not a product): the decoder's instance-norm statistics (its ``ReduceMean``
  outputs) and/or dynamic-quantization scales (``DynamicQuantizeLinear`` scale and zero point) taken from the
  whole-segment decode and fed to every window instead of the window's own: ``norms``, ``frame-norms`` (only the
  frame-rate blocks before the generator), ``gen-norms`` (only the generator's), ``quant``, ``all``; and two that
  need no whole decode of the segment: ``calib`` (every norm's statistics averaged over the *other* replies' whole
  decodes, a per-voice calibration) and ``frame+calib`` (the frame-rate blocks' own whole-segment statistics, which
  cost 4 % of the decoder, and the generator's calibrated). It says how
  much of the gap each source of mismatch makes, and so whether precomputing it could close the gap.

Prints WER whole vs each configuration (paired, with a 95 % bootstrap interval over the segments:
bench/wer_stats.py), median log-mel distance and SNR, the decoder time of the streamed decode against the whole
decode (same run), the median time of the first window, and how many segments would stall a listener who plays from
the first chunk on (a later chunk decoded after playback reached it, solo on this machine).

    uv run python bench/bench_stream_configs.py [--replies N] [--config NAME=16:12:48] ...
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort
from bench_intelligibility import load_asr_support
from benchlib import Listener, print_table
from corpus import REPLIES, WER_REPLIES
from onnx import helper
from wer_stats import edits_per_text, paired_difference, with_white_noise

from kokoro_server.engines import EngineConfig, assemble_int8_model, load_engine
from kokoro_server.engines.base import FRAME_SAMPLES
from kokoro_server.engines.onnx_durations import with_duration_output
from kokoro_server.engines.onnx_split import ASR, DECODER_INPUTS, F0, SOURCE, N, split_model
from kokoro_server.engines.onnx_synth import OnnxSynthesizer
from kokoro_server.pcm import float_to_pcm16
from kokoro_server.stream_quality import log_mel_distance, snr_db

GENERATOR = "/decoder/decoder/generator/"
DEFAULT_CONFIGS = (
    "m16=16:12:48",
    "m24=24:12:48",
    "m32=32:12:48",
    "m48=48:12:48",
    "m32-96=32:12:96",
    "m32-192=32:12:192",
    "m32-geo=32:12:24*2",
    "m16+norms=16:12:48:norms",
    "m16+quant=16:12:48:quant",
    "m16+all=16:12:48:all",
)


REST = 0
"""``later`` of a configuration whose second window is the whole segment (``sizes`` = ``rest``)."""


@dataclass(frozen=True)
class Config:
    name: str
    margin: int
    first: int
    later: int
    growth: int
    inject: str
    first_percent: int = 0

    @staticmethod
    def parse(spec: str) -> Config:
        name, _, rest = spec.partition("=")
        parts = rest.split(":")
        size, _, growth = parts[2].partition("*")
        first, _, percent = parts[1].partition("%")
        return Config(
            name,
            int(parts[0]),
            int(first),
            REST if size == "rest" else int(size),
            int(growth or 1),
            parts[3] if len(parts) > 3 else "",
            int(percent or 0),
        )

    @property
    def spelled(self) -> str:
        first = f"{self.first}%{self.first_percent}" if self.first_percent else str(self.first)
        later = "rest" if self.later == REST else f"{self.later}{'*' + str(self.growth) if self.growth > 1 else ''}"
        return f"{self.margin}:{first}:{later}{' ' + self.inject if self.inject else ''}"

    def windows(self, frames: int, lead: int) -> list[tuple[int, int, int, int]]:
        first = max(self.first, -(-frames * self.first_percent // 100))
        if self.later == REST:
            end = min(frames, lead + first)
            head = (0, min(frames, end + self.margin), 0, end)
            return [head] if end >= frames else [head, (0, frames, end, frames)]
        out = []
        start, end, size = 0, min(frames, lead + first), self.later
        while start < frames:
            lo, hi = max(0, start - self.margin), min(frames, end + self.margin)
            out.append((lo, hi, start - lo, end - lo))
            start, end = end, min(frames, end + size)
            size *= self.growth
        return out


def _selected(node: onnx.NodeProto, inject: str) -> bool:
    if node.op_type == "ReduceMean":
        in_gen = node.name.startswith(GENERATOR)
        return (
            inject in ("norms", "all", "calib", "frame+calib")
            or (inject == "frame-norms" and not in_gen)
            or (inject == "gen-norms" and in_gen)
        )
    if node.op_type == "DynamicQuantizeLinear":
        return inject in ("quant", "all")
    return False


def statistics_names(decoder: onnx.ModelProto, inject: str) -> list[str]:
    """The tensors ``inject`` replaces: ReduceMean outputs, DynamicQuantizeLinear scales and zero points."""
    names: list[str] = []
    for node in decoder.graph.node:
        if _selected(node, inject):
            names += list(node.output) if node.op_type == "ReduceMean" else list(node.output[1:])
    return names


def exposing(decoder: onnx.ModelProto, names: list[str]) -> bytes:
    """The decoder graph with ``names`` as extra outputs (the whole decode reports its statistics)."""
    model = onnx.ModelProto()
    model.CopyFrom(decoder)
    model.graph.output.extend(helper.make_empty_tensor_value_info(name) for name in names)
    return bytes(model.SerializeToString())


def injecting(decoder: onnx.ModelProto, inject: str, types: dict[str, int]) -> bytes:
    """The decoder graph whose selected statistics are inputs: ReduceMean nodes removed, DynamicQuantizeLinear
    replaced by QuantizeLinear on a given scale and zero point."""
    model = onnx.ModelProto()
    model.CopyFrom(decoder)
    nodes = []
    inputs = []
    for node in model.graph.node:
        if not _selected(node, inject):
            nodes.append(node)
        elif node.op_type == "ReduceMean":
            inputs.append(helper.make_tensor_value_info(node.output[0], types[node.output[0]], None))
        else:
            y, scale, zero = node.output
            inputs += [helper.make_tensor_value_info(n, types[n], None) for n in (scale, zero)]
            nodes.append(helper.make_node("QuantizeLinear", [node.input[0], scale, zero], [y], name=node.name + "_fed"))
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    model.graph.input.extend(inputs)
    return bytes(model.SerializeToString())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replies", type=int, default=len(REPLIES))
    parser.add_argument("--wer-corpus", action="store_true", help="the 83 replies of WER_REPLIES instead of REPLIES")
    parser.add_argument("--config", action="append", help="NAME=margin:first:sizes[:inject] (repeatable)")
    parser.add_argument("--no-wer", action="store_true")
    parser.add_argument(
        "--noise-db",
        type=float,
        action="append",
        default=[],
        help="also the whole decode plus white noise this many dB below it: Whisper's own noise floor (repeatable)",
    )
    args = parser.parse_args(argv)
    configs = [Config.parse(spec) for spec in (args.config or DEFAULT_CONFIGS)]
    engine = load_engine(EngineConfig(threads=2))
    synth = engine._synthesizer
    assert isinstance(synth, OnnxSynthesizer)
    assert synth._front is not None
    assert synth._decoder is not None
    edited = with_duration_output(assemble_int8_model().read_bytes())
    graphs = split_model(edited.model, duration_output=edited.duration_output)
    decoder = onnx.load_from_string(graphs.decoder)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    options.enable_mem_pattern = False
    all_stats = statistics_names(decoder, "all")
    stats_session = ort.InferenceSession(exposing(decoder, all_stats), options, providers=["CPUExecutionProvider"])
    types = {o.name: o.type for o in stats_session.get_outputs()}
    elem: dict[str, int] = {"tensor(float)": onnx.TensorProto.FLOAT, "tensor(uint8)": onnx.TensorProto.UINT8}
    tensor_types = {name: elem[t] for name, t in types.items() if name in set(all_stats)}
    sessions: dict[str, ort.InferenceSession] = {}
    for config in configs:
        if config.inject and config.inject not in sessions:
            sessions[config.inject] = ort.InferenceSession(
                injecting(decoder, config.inject, tensor_types), options, providers=["CPUExecutionProvider"]
            )
    voice = engine.default_voice
    texts: list[str] = []
    pcm: dict[str, list[bytes]] = {"whole": [], **{c.name: [] for c in configs}}
    mel: dict[str, list[float]] = {c.name: [] for c in configs}
    snr: dict[str, list[float]] = {c.name: [] for c in configs}
    seconds: dict[str, float] = {"whole": 0.0, **{c.name: 0.0 for c in configs}}
    first_window_ms: dict[str, list[float]] = {c.name: [] for c in configs}
    stalled: dict[str, int] = {c.name: 0 for c in configs}
    prepared = []
    for text in (WER_REPLIES if args.wer_corpus else REPLIES)[: args.replies]:
        segment = engine.plan(text, voice=voice, speed=1.0)[0]
        style = engine._voices.style_for(engine._voices.resolve(voice), len(segment.tokens)).reshape(1, -1)
        feeds = {
            synth._inputs.tokens: np.array([[0, *segment.tokens, 0]], dtype=np.int64),
            synth._inputs.style: style,
            synth._inputs.speed: np.array([1.0], dtype=synth._inputs.speed_type),
        }
        asr, f0, energy, source, durations = synth._front.run([*DECODER_INPUTS, graphs.duration_output], feeds)
        frames = int(asr.shape[2])
        lead = int(np.asarray(durations).reshape(-1).round()[0])

        def window_feeds(
            lo: int,
            hi: int,
            asr: Any = asr,
            f0: Any = f0,
            energy: Any = energy,
            source: Any = source,
            style: Any = style,
        ) -> dict[str, npt.NDArray[np.float32]]:
            return {
                ASR: asr[:, :, lo:hi],
                F0: f0[:, 2 * lo : 2 * hi],
                N: energy[:, 2 * lo : 2 * hi],
                SOURCE: source[:, FRAME_SAMPLES * lo : FRAME_SAMPLES * hi],
                graphs.style_input: style,
            }

        (whole_out, *stat_values) = stats_session.run(None, window_feeds(0, frames))
        whole = np.asarray(whole_out, dtype=np.float32).reshape(-1)
        stats = dict(zip(all_stats, stat_values, strict=True))
        pcm["whole"].append(float_to_pcm16(whole))
        for db in args.noise_db:
            noisy = with_white_noise(whole, db, seed=len(texts))
            pcm.setdefault(f"whole+noise{db:g}dB", []).append(float_to_pcm16(noisy))
        texts.append(segment.text)
        prepared.append((whole, frames, lead, window_feeds, stats))
    for index, (whole, frames, lead, window_feeds, stats) in enumerate(prepared):
        others = [p[4] for j, p in enumerate(prepared) if j != index] or [stats]
        # the whole decode timed here, beside the configurations (the machine's load changes over a run), on the
        # plain decoder (the statistics-exposing graph's extra outputs cost time)
        started = time.perf_counter()
        synth._decoder.run([graphs.audio_output], window_feeds(0, frames))
        seconds["whole"] += time.perf_counter() - started
        for config in configs:
            session = sessions.get(config.inject, synth._decoder)
            extra = {n: stats[n] for n in statistics_names(decoder, config.inject)} if config.inject else {}
            if config.inject in ("calib", "frame+calib"):
                # leave-one-out: the other replies' whole-segment statistics, averaged (a per-voice calibration)
                for name in extra:
                    if config.inject == "calib" or name.startswith(GENERATOR):
                        extra[name] = np.mean([o[name] for o in others], axis=0).astype(np.float32)
            pieces = []
            decoding = 0.0  # the decoder's time so far: when each chunk would arrive, the listener's work left out
            listener = Listener()
            for lo, hi, keep_start, keep_end in config.windows(frames, lead):
                started = time.perf_counter()
                (audio,) = session.run([graphs.audio_output], {**window_feeds(lo, hi), **extra})
                flat = np.asarray(audio, dtype=np.float32).reshape(-1)
                pieces.append(flat[FRAME_SAMPLES * keep_start : FRAME_SAMPLES * keep_end])
                decoding += time.perf_counter() - started
                if listener.start_s is None:
                    first_window_ms[config.name].append(decoding * 1000)
                listener.arrive(float_to_pcm16(pieces[-1]), decoding)
            seconds[config.name] += decoding
            stalled[config.name] += listener.stall_s > 0.02
            streamed = np.concatenate(pieces)
            mel[config.name].append(log_mel_distance(whole, streamed))
            snr[config.name].append(snr_db(whole, streamed))
            pcm[config.name].append(float_to_pcm16(streamed))
        print(f"decoded reply {index + 1}", flush=True)
    wer: dict[str, float] = {}
    paired: dict[str, str] = {}
    if not args.no_wer:
        asr_support = load_asr_support()
        model = asr_support.load_whisper()
        words = [len(asr_support.normalise(text)) for text in texts]
        edits = {}
        for name, audio in pcm.items():
            heard = [asr_support.transcribe(model, p) for p in audio]
            edits[name] = edits_per_text(texts, heard, asr_support.word_error_rate, words)
            wer[name] = sum(edits[name]) / sum(words)
            print(f"WER {name}: {wer[name]:.4f}", flush=True)
        for name, config_edits in edits.items():
            if name != "whole":
                result = paired_difference(words, edits["whole"], config_edits)
                paired[name] = f"{result.difference:+.4f} [{result.low:+.4f}, {result.high:+.4f}]"
    rows = [("whole", "-", f"{wer.get('whole', float('nan')):.4f}", "-", "-", "-", "1.00", "-", "-")]
    for db in args.noise_db:
        name = f"whole+noise{db:g}dB"
        rows.append(
            (
                name,
                "-",
                f"{wer.get(name, float('nan')):.4f}",
                paired.get(name, "-"),
                "-",
                f"{db:g}",
                "1.00",
                "-",
                "-",
            )
        )
    for config in configs:
        rows.append(
            (
                config.name,
                config.spelled,
                f"{wer.get(config.name, float('nan')):.4f}",
                paired.get(config.name, "-"),
                f"{statistics.median(mel[config.name]):.3f}",
                f"{statistics.median(snr[config.name]):.1f}",
                f"{seconds[config.name] / seconds['whole']:.2f}",
                f"{statistics.median(first_window_ms[config.name]):.0f}",
                f"{stalled[config.name]}/{len(texts)}",
            )
        )
    print_table(
        f"streamed configurations vs whole decode, {len(texts)} corpus segments (same run)",
        (
            "config",
            "margin:first:later[*growth] inject",
            "WER",
            "vs whole (paired, 95 % interval)",
            "log-mel median",
            "SNR dB median",
            "decoder time / whole",
            "first window ms (median)",
            "segments with a stall > 20 ms",
        ),
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
