"""Time to first audio over the TTS WebSocket: batch vs incremental (the reference experiment).

One ~267-character, four-sentence English text; five runs per mode, measured by a client over the real
WebSocket of a real ``kokoro-server`` process (int8 onnx engine):

- batch: the whole text in one synthesize request;
- incremental: the four sentences sent as four requests on one session (as the agent does);
- incremental + first fragment: the segmenter's first-fragment policy cuts the first clause out early.

Prints medians, the ratios, and each mode's time to first audio as a fraction of the time to synthesize the
whole text (targets: incremental <= 0.25, with first fragment <= 0.12). Usage: ``python bench/bench_ttfa.py``.
"""

from __future__ import annotations

import argparse
import asyncio

from benchlib import REFERENCE_TEXT, median, print_table, run_server, speak_pieces

from relay_core.text.segmenter import SentenceSegmenter, split_sentences


def first_fragment_pieces(text: str, words: int) -> list[str]:
    segmenter = SentenceSegmenter(first_fragment_words=words)
    return [*segmenter.feed(text), *segmenter.flush()]


async def measure(ws_url: str, runs: int, fragment_words: int) -> dict[str, list[tuple[float, float]]]:
    modes = {
        "batch": [REFERENCE_TEXT],
        "incremental": split_sentences(REFERENCE_TEXT),
        f"incremental + first fragment ({fragment_words} words)": first_fragment_pieces(REFERENCE_TEXT, fragment_words),
    }
    await speak_pieces(ws_url, ["Warm up."])
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in modes}
    for _ in range(runs):  # interleave the modes so that machine noise hits them alike
        for name, pieces in modes.items():
            timing = await speak_pieces(ws_url, pieces)
            assert timing.first_audio_s is not None
            results[name].append((timing.first_audio_s, timing.done_s))
    for name, pieces in modes.items():
        print(f"{name}: {len(pieces)} request(s): {[p[:30] + '...' for p in pieces]}")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--fragment-words", type=int, default=4)
    args = parser.parse_args()
    print(f"text: {len(REFERENCE_TEXT)} characters, {len(split_sentences(REFERENCE_TEXT))} sentences")
    with run_server() as server:
        results = asyncio.run(measure(server.ws_url, args.runs, args.fragment_words))
    whole = median([done for _, done in results["batch"]])
    batch_ttfa = median([first for first, _ in results["batch"]])
    rows = []
    for name, samples in results.items():
        ttfa = median([first for first, _ in samples])
        rows.append([name, ttfa * 1000, ttfa / batch_ttfa, ttfa / whole])
    print_table(
        f"Time to first audio, median of {args.runs} runs (whole text synthesized in {whole * 1000:.0f} ms)",
        ["mode", "TTFA ms", "ratio to batch TTFA", "ratio to whole-text synthesis"],
        rows,
    )


if __name__ == "__main__":
    main()
