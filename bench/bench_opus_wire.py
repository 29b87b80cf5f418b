"""PCM vs Opus to clients on the local stack: bytes and API Gateway messages per second of speech, and the latency
the agent's Opus encoder adds before the first sound.

1. Through the whole local relay (``relay_local.relay_stack.RelayStack``: local API Gateway, the REAL gateway
   functions, the agent app and the TTS container in processes of their own), each sentence of a small corpus is
   a turn with ``audio: pcm`` and a turn with ``audio: opus``; for each it counts the ``audio_chunk`` messages the
   client received and their UTF-8 bytes (what API Gateway bills and what a phone downloads), divided by the
   seconds of speech.
2. Offline, the agent's encoder (``voice_agent.opus_stream.OpusStream``) on real Kokoro PCM pieces: how long
   encoding the turn's first TTS piece takes (the wait before the first packet can leave the agent), median of
   many runs, and the CPU share of encoding in real time.

Usage: ``uv run python bench/bench_opus_wire.py [--runs 2]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import time
import warnings

from benchlib import print_table, run_agent, run_server

from relay_cli.cli import quiet_agentcore_access_log
from relay_cli.gateway_client import TurnReport, run_turn
from relay_core import limits
from relay_core.audio_piece import AudioChoice
from relay_core.client.session import TurnOutcome
from relay_local.relay_stack import RelayStack
from voice_agent.opus_stream import OpusStream

CORPUS = (
    "Sure. Your flight leaves at nine forty from gate twelve. Boarding starts thirty minutes before departure.",
    "Good question! The short answer is yes. The longer answer depends on how much memory your phone has left.",
    "It is twelve degrees and cloudy right now, with rain expected later this evening.",
)


def audio_figures(report: TurnReport) -> tuple[int, int, float]:
    """(audio messages, their UTF-8 bytes, seconds of speech) of one turn."""
    audio = [m for m in report.received if '"type":"audio_chunk"' in m]
    seconds = len(report.pcm) / limits.SAMPLE_WIDTH_BYTES / limits.SAMPLE_RATE
    return len(audio), sum(len(m.encode("utf-8")) for m in audio), seconds


async def wire(stack: RelayStack, runs: int) -> dict[AudioChoice, list[tuple[int, int, float]]]:
    out: dict[AudioChoice, list[tuple[int, int, float]]] = {choice: [] for choice in AudioChoice}
    token = stack.dev_token("bench-opus")
    for _ in range(runs):
        for text in CORPUS:
            for choice in AudioChoice:
                report = await run_turn(stack.gateway_url, token, text, audio=choice)
                if report.outcome is not TurnOutcome.COMPLETED:
                    raise SystemExit(f"a {choice} turn ended {report.outcome}: {report.code} {report.message}")
                out[choice].append(audio_figures(report))
    return out


def encoder_latency(pcm_pieces: list[bytes], runs: int = 200) -> tuple[float, float, float]:
    """(median ms to encode the first piece, its seconds of audio, encoding CPU per second of audio in %)."""
    first: list[float] = []
    for _ in range(runs):
        stream = OpusStream()
        started = time.perf_counter()
        stream.encode(pcm_pieces[0])
        first.append((time.perf_counter() - started) * 1000)
    stream = OpusStream()
    started = time.process_time()
    for piece in pcm_pieces:
        stream.encode(piece)
    stream.flush()
    cpu = time.process_time() - started
    seconds = sum(map(len, pcm_pieces)) / limits.SAMPLE_WIDTH_BYTES / limits.SAMPLE_RATE
    return statistics.median(first), len(pcm_pieces[0]) / 2 / limits.SAMPLE_RATE, 100 * cpu / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=2, help="passes over the corpus (default 2)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    quiet_agentcore_access_log()
    with contextlib.ExitStack() as servers:
        tts = servers.enter_context(run_server())
        agent_url = servers.enter_context(run_agent(tts.ws_url)).http_url
        stack = servers.enter_context(RelayStack(agent_url=agent_url, function_env={"TURNS_PER_MINUTE": "1000"}))
        figures = asyncio.run(wire(stack, args.runs))
        pieces = asyncio.run(first_pieces(stack))
    rows = []
    for choice, turns in figures.items():
        messages = sum(t[0] for t in turns)
        size = sum(t[1] for t in turns)
        seconds = sum(t[2] for t in turns)
        rows.append(
            [
                choice.value,
                f"{seconds:.1f}",
                f"{size / seconds:,.0f}",
                f"{size * 8 / seconds / 1000:.0f}",
                f"{messages / seconds:.2f}",
            ]
        )
    print_table(
        "Audio to clients through the local gateway", ["audio", "speech s", "bytes/s", "kbit/s", "audio msgs/s"], rows
    )
    ms, first_s, cpu = encoder_latency(pieces)
    print(
        f"Opus encoder: first TTS piece ({first_s * 1000:.0f} ms of speech) encoded in {ms:.2f} ms (median); "
        f"encoding costs {cpu:.2f} % of a core per real-time stream"
    )


async def first_pieces(stack: RelayStack) -> list[bytes]:
    """The PCM pieces of one PCM turn, as the agent's chunks carried them (the first is the first TTS piece)."""
    import httpx  # noqa: PLC0415

    from relay_cli.agent_client import stream_turn  # noqa: PLC0415
    from relay_core.agent.events import AgentPayload, AudioChunk  # noqa: PLC0415
    from relay_core.audio import b64decode  # noqa: PLC0415

    async with httpx.AsyncClient() as client:
        events = [e async for e in stream_turn(client, stack.agent_url, AgentPayload(prompt=CORPUS[0]))]
    return [b64decode(e.data) for e in events if isinstance(e, AudioChunk)]


if __name__ == "__main__":
    main()
