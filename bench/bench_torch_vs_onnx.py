"""CPU: the torch engine (KModel with weights converted from the int8 ONNX) vs the onnx engine.

Same sentences (the reference text's four sentences, then the whole text), same voice, same
threads. For each engine: time to first audio (plan + render of the first segment), real-time
factor (synthesis time / audio time) per sentence and for the whole text; medians of --runs,
after one warm-up. Prints a Markdown table with torch/onnx ratios.
Usage: ``python bench/bench_torch_vs_onnx.py [--runs 3] [--threads N]``.
"""

from __future__ import annotations

import argparse
import time

from benchlib import REFERENCE_TEXT, median, print_table

from kokoro_server.convert import ensure_converted_weights
from kokoro_server.engines import Engine, EngineConfig, load_engine
from relay_core.text.segmenter import split_sentences

VOICE = "jf_alpha"


def measure(engine: Engine, text: str) -> tuple[float, float, float]:
    """(time to first audio s, total s, audio s) for one text."""
    started = time.perf_counter()
    segments = engine.plan(text, voice=VOICE, speed=1.0)
    first = engine.render(segments[0], voice=VOICE, speed=1.0)
    ttfa = time.perf_counter() - started
    samples = first.size + sum(engine.render(s, voice=VOICE, speed=1.0).size for s in segments[1:])
    return ttfa, time.perf_counter() - started, samples / engine.sample_rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    started = time.perf_counter()
    weights = ensure_converted_weights()
    print(f"converted weights: {weights} ({time.perf_counter() - started:.1f} s incl. conversion if cold)")
    engines = {
        "onnx": load_engine(EngineConfig(engine="onnx", threads=args.threads)),
        "torch": load_engine(EngineConfig(engine="torch", weights_dir=weights, device="cpu", threads=args.threads)),
    }
    texts = {f"sentence {i + 1}": s for i, s in enumerate(split_sentences(REFERENCE_TEXT))}
    texts["whole text"] = REFERENCE_TEXT
    for engine in engines.values():
        measure(engine, "Warm up.")
    results: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    for _ in range(args.runs):  # interleave engines so machine noise hits both alike
        for label, text in texts.items():
            for name, engine in engines.items():
                results.setdefault((name, label), []).append(measure(engine, text))
    rows = []
    for label in texts:
        onnx_ttfa = median([r[0] for r in results[("onnx", label)]])
        torch_ttfa = median([r[0] for r in results[("torch", label)]])
        onnx_rtf = median([r[1] / r[2] for r in results[("onnx", label)]])
        torch_rtf = median([r[1] / r[2] for r in results[("torch", label)]])
        audio_s = median([r[2] for r in results[("onnx", label)]])
        rows.append(
            [
                label,
                audio_s,
                onnx_ttfa * 1000,
                torch_ttfa * 1000,
                torch_ttfa / onnx_ttfa,
                onnx_rtf,
                torch_rtf,
                torch_rtf / onnx_rtf,
            ]
        )
    print_table(
        f"CPU torch (converted int8 weights, fp32) vs onnx (int8), median of {args.runs}",
        [
            "text",
            "audio s",
            "onnx TTFA ms",
            "torch TTFA ms",
            "TTFA torch/onnx",
            "onnx RTF",
            "torch RTF",
            "RTF torch/onnx",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
