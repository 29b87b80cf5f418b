"""End-to-end time to first audio through agent + container: bidi vs batch (the reference's 0.42x / 0.29x).

A client sends a prompt to the real agent app (AgentCore app, Strands agent, offline ``speak`` model emitting a
~267-character, four-sentence reply at a realistic 40 tokens/s) which talks to the real TTS container app
(int8 Kokoro-82M on CPU) over its WebSocket, all on loopback. Time to first audio = from the client's request
to the first ``audio_chunk`` event it receives. Modes, interleaved run by run so machine noise hits them
alike:

- batch: the agent waits for the whole reply, then one synthesize request (the baseline);
- bidi: each sentence goes into the one TTS session the moment it is complete;
- bidi + first fragment (the agent's default): the first piece may end at a clause mark after N words.

Prints per-mode medians and the ratio bidi/batch (target with the first-fragment policy: <= 0.30).

``--corpus N`` (issues 12 and 21) instead runs the first N replies of bench/corpus.py through two containers,
``KOKORO_STREAM_DECODER`` off and on (the default), each with its own agent (the agent's defaults), batch and bidi
interleaved reply by reply, and compares bidi's first SOUND (its first byte plus the playback time to its first
sample at -40 dBFS, as a client playing from the first byte hears it) with batch's first byte: the median of the
per-reply ratios (issue 21's target with streaming on: <= 0.40), and bidi on against batch off.
Usage: ``uv run python bench/bench_agent_ttfa.py [--runs 5] [--rate 40] [--fragment-words 4] [--corpus 12]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import statistics

import httpx
from benchlib import REFERENCE_TEXT, print_table
from corpus import REPLIES

from kokoro_server.app import create_app as create_tts_app
from kokoro_server.config import ServerConfig
from kokoro_server.silence import first_audible_sample, pcm16_to_float
from relay_cli.agent_client import collect_turn
from relay_core import limits
from relay_core.agent.events import AgentEnd, AgentPayload, TurnMode
from relay_core.text.segmenter import SentenceSegmenter
from relay_local.bedrock.models import tokenize
from relay_local.servers import BackgroundServer
from relay_local.stack import TTS_WS_PATH, VoiceStack, wait_until_ready
from voice_agent.app import create_app
from voice_agent.config import AgentConfig, ModelKind

REPLY = REFERENCE_TEXT
"""The speak model's reply (it echoes the prompt): the reference text of every TTFA benchmark."""


async def one_turn(client: httpx.AsyncClient, agent_url: str, mode: TurnMode) -> tuple[float, float]:
    result = await collect_turn(client, agent_url, AgentPayload(prompt=REPLY, mode=mode))
    terminal = result.terminal
    if not isinstance(terminal, AgentEnd) or result.time_to_first_audio_s is None:
        raise RuntimeError(f"the turn failed: {terminal}")
    return result.time_to_first_audio_s, result.elapsed_s


async def measure(urls: dict[str, tuple[str, TurnMode]], runs: int) -> dict[str, list[tuple[float, float]]]:
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in urls}
    async with httpx.AsyncClient() as client:
        for url, mode in urls.values():  # warm up every path (first inference, connections)
            await one_turn(client, url, mode)
        for _ in range(runs):
            for name, (url, mode) in urls.items():
                results[name].append(await one_turn(client, url, mode))
    return results


async def corpus_turn(client: httpx.AsyncClient, agent_url: str, reply: str, mode: TurnMode) -> tuple[float, float]:
    """(first byte s, first sound s) of one turn speaking ``reply``."""
    result = await collect_turn(client, agent_url, AgentPayload(prompt=reply, mode=mode))
    if not isinstance(result.terminal, AgentEnd) or result.time_to_first_audio_s is None:
        raise RuntimeError(f"the turn failed: {result.terminal}")
    audible = first_audible_sample(pcm16_to_float(result.pcm)) or 0
    return result.time_to_first_audio_s, result.time_to_first_audio_s + audible / limits.SAMPLE_RATE


def written_at(reply: str, rate: float) -> tuple[float, float]:
    """When the speak model has written (seconds after its first token, token ``i`` at ``i / rate``) the token that
    lets the agent's segmenter emit the reply's first piece, and the reply's last token: with a TTS that took no
    time, bidi's first byte and batch's would come then."""
    config = AgentConfig()
    tokens = tokenize(reply)
    segmenter = SentenceSegmenter(max_chars=config.max_sentence_chars, first_fragment_words=config.first_fragment_words)
    first = next((i for i, token in enumerate(tokens) if segmenter.feed(token)), len(tokens) - 1)
    return first / rate, (len(tokens) - 1) / rate


CONTAINER_MODES = ("on", "off")
"""The container's ``KOKORO_STREAM_DECODER`` in corpus mode: the default (``on``: the first sound decoded chunk by
chunk) and whole segments, each with its own container and agent, interleaved reply by reply."""


@dataclasses.dataclass
class CorpusTurns:
    """One reply through one container mode: batch's first byte, bidi's first byte and first sound (seconds)."""

    batch_byte: float
    bidi_byte: float
    bidi_sound: float


async def measure_corpus(agent_urls: dict[str, str], replies: list[str]) -> list[dict[str, CorpusTurns]]:
    """Per reply, batch then bidi on each container mode in turn (so machine noise hits the modes alike)."""
    rows: list[dict[str, CorpusTurns]] = []
    async with httpx.AsyncClient(timeout=600) as client:
        for url in agent_urls.values():
            await corpus_turn(client, url, "Warm up.", TurnMode.BIDI)
        for index, reply in enumerate(replies):
            row: dict[str, CorpusTurns] = {}
            for mode, url in agent_urls.items():
                batch_byte, _ = await corpus_turn(client, url, reply, TurnMode.BATCH)
                bidi_byte, bidi_sound = await corpus_turn(client, url, reply, TurnMode.BIDI)
                row[mode] = CorpusTurns(batch_byte, bidi_byte, bidi_sound)
            rows.append(row)
            summary = (f"{m}: batch {t.batch_byte:.2f} s, bidi sound {t.bidi_sound:.2f} s" for m, t in row.items())
            print(f"  reply {index}: " + ", ".join(summary), flush=True)
    return rows


def corpus_main(count: int, rate: float) -> None:
    replies = list(REPLIES[:count])
    agent = AgentConfig(model=ModelKind.SPEAK, speak_tokens_per_s=rate)
    with contextlib.ExitStack() as stack_of:
        urls: dict[str, str] = {}
        for mode in CONTAINER_MODES:
            container = ServerConfig.from_env({"KOKORO_STREAM_DECODER": mode})
            tts = stack_of.enter_context(BackgroundServer(create_tts_app(container), name=f"kokoro-{mode}"))
            wait_until_ready(tts.http_url)
            stack = stack_of.enter_context(VoiceStack(tts_url=tts.ws_url + TTS_WS_PATH, agent_config=agent))
            urls[mode] = stack.agent_url
        rows = asyncio.run(measure_corpus(urls, replies))
    table = []
    for index, (reply, row) in enumerate(zip(replies, rows, strict=True)):
        fragment_s, reply_s = written_at(reply, rate)
        on, off = row["on"], row["off"]
        table.append(
            [
                index,
                off.batch_byte * 1000,
                on.batch_byte * 1000,
                off.bidi_sound * 1000,
                on.bidi_sound * 1000,
                fragment_s * 1000,
                reply_s * 1000,
                off.bidi_sound / off.batch_byte,
                on.bidi_sound / on.batch_byte,
                on.bidi_sound / off.batch_byte,
                fragment_s / reply_s if reply_s else 1.0,
            ]
        )
    print_table(
        f"Corpus ({len(replies)} replies), speak model at {rate:g} tokens/s, agent defaults, the container with "
        "KOKORO_STREAM_DECODER off and on (the default), interleaved reply by reply: bidi first sound vs batch first "
        "byte (ms). 'written': when the model had written what the segmenter needs for the first piece (bidi) and "
        "the whole reply (batch)",
        [
            "reply",
            "batch first byte, off",
            "batch first byte, on",
            "bidi first sound, off",
            "bidi first sound, on",
            "first piece written",
            "reply written",
            "ratio off",
            "ratio on",
            "ratio on / batch off",
            "floor (instant TTS)",
        ],
        table,
    )
    for column, name in ((7, "container off"), (8, "container on (default)"), (9, "bidi on / batch off")):
        ratios = [float(r[column]) for r in table]
        print(
            f"median over replies of bidi first sound / batch first byte, {name}: {statistics.median(ratios):.3f} "
            f"(min {min(ratios):.3f}, max {max(ratios):.3f}); issue 21's target <= 0.40"
        )
    floors = [float(r[10]) for r in table]
    print(
        f"the same ratio with a TTS that took no time (first piece written / reply written): median "
        f"{statistics.median(floors):.3f} (min {min(floors):.3f}, max {max(floors):.3f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rate", type=float, default=40.0, help="speak model tokens per second")
    parser.add_argument("--fragment-words", type=int, default=AgentConfig().first_fragment_words or 4)
    parser.add_argument("--corpus", type=int, default=0, help="run the first N corpus replies instead (first sound)")
    args = parser.parse_args()
    if args.corpus:
        corpus_main(args.corpus, args.rate)
        return

    base = AgentConfig(model=ModelKind.SPEAK, speak_tokens_per_s=args.rate)
    pieces_on = SentenceSegmenter(first_fragment_words=args.fragment_words)
    pieces_off = SentenceSegmenter()
    print(f"reply: {len(REPLY)} characters, {len(tokenize(REPLY))} tokens at {args.rate:g} tokens/s")
    print(f"pieces with first fragment ({args.fragment_words} words): {pieces_on.feed(REPLY) + pieces_on.flush()}")
    print(f"pieces without: {len(pieces_off.feed(REPLY) + pieces_off.flush())} sentences")
    with VoiceStack(agent_config=base) as stack:
        off_config = dataclasses.replace(base, tts_url=stack.tts_url, first_fragment_words=None)
        with BackgroundServer(create_app(off_config), name="agent-no-fragment") as agent_off:
            urls = {
                "batch": (stack.agent_url, TurnMode.BATCH),
                "bidi (first fragment off)": (agent_off.http_url, TurnMode.BIDI),
                f"bidi (first fragment {args.fragment_words} words, default)": (stack.agent_url, TurnMode.BIDI),
            }
            results = asyncio.run(measure(urls, args.runs))

    medians = {name: statistics.median(t for t, _ in runs) for name, runs in results.items()}
    batch = medians["batch"]
    rows = []
    for name, runs in results.items():
        turn = statistics.median(e for _, e in runs)
        values = " ".join(f"{t:.2f}" for t, _ in runs)
        rows.append([name, medians[name] * 1000, turn * 1000, medians[name] / batch, values])
    print_table(
        f"End-to-end time to first audio through agent + container, speak model at {args.rate:g} tokens/s, "
        f"median of {args.runs} runs",
        ["mode", "TTFA ms", "turn ms", "ratio to batch", "runs (TTFA s)"],
        rows,
    )
    print("\nreference: 0.42 locally, 0.29 deployed; target with the first-fragment policy: <= 0.30")


if __name__ == "__main__":
    main()
