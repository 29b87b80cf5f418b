"""What keeping conversations in S3 costs the first sound: no store vs the store's queued writes vs writes made inline.

Three agents side by side in one process, each the real agent app (Strands, the ``speak`` model through the local
Bedrock stand-in, at a realistic 40 tokens/s) speaking through one real TTS container app (int8 Kokoro-82M on CPU):

- ``memory``: no history store (the baseline);
- ``queued``: the history store as shipped (``VOICE_AGENT_HISTORY_BUCKET``): Strands' writes queued for the store's
  writer thread, a turn waiting for none of them before its model call;
- ``inline``: the same store with every write made where Strands asks for it, on the agent's event loop before the
  model call (how the store behaved before its writes were queued).

The bucket is a moto server in its own process behind a proxy that delays every request by ``--s3-latency-ms``
(default 30 ms: a same-region S3 request's round trip and first byte; 0 gives moto's own). Each conversation (a new
session id) has ``--turns`` turns, replies from bench/corpus.py; the three agents take each turn in turn, so machine
noise hits them alike. Measured at the client: the first audible sound (first audio byte plus the playback time to
the first sample at -40 dBFS). Prints medians for a conversation's first turn and for the turns after it, and the
ratios to ``memory``.

Usage: ``uv run python bench/bench_history_first_audio.py [--conversations 6] [--turns 3] [--s3-latency-ms 30]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
from benchlib import free_port, print_table
from corpus import REPLIES

from kokoro_server.app import create_app as create_tts_app
from kokoro_server.silence import first_audible_sample, pcm16_to_float
from relay_cli.agent_client import collect_turn
from relay_core import limits
from relay_core.agent.events import AgentEnd, AgentPayload
from relay_local.bedrock.models import ModelRegistry
from relay_local.bedrock.standin import BedrockStandIn
from relay_local.moto_s3 import S3_ENDPOINT_ENV, LocalBucket
from relay_local.servers import BackgroundServer
from relay_local.stack import TTS_WS_PATH, wait_until_ready
from voice_agent.app import VoiceAgentService, create_app
from voice_agent.config import AgentConfig, ModelKind
from voice_agent.history_writer import HistoryWriter, Write

logging.getLogger("bedrock_agentcore").setLevel(logging.WARNING)  # one line per invocation otherwise

VARIANTS = ("memory", "queued", "inline")


class InlineWriter(HistoryWriter):
    """Every write made at once, on the thread that asks (the store before its writes were queued)."""

    def submit(self, key: str, what: str, write: Write) -> None:
        write()


async def _delay_proxy(listen_port: int, target_port: int, delay_s: float) -> asyncio.Server:
    """A TCP proxy to ``target_port`` that holds every chunk from the client for ``delay_s`` (one per request)."""

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
        with contextlib.suppress(ConnectionError):
            while chunk := await reader.read(65536):
                if delay:
                    await asyncio.sleep(delay)
                writer.write(chunk)
                await writer.drain()
        writer.close()

    async def serve(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target_port)
        await asyncio.gather(pipe(client_reader, server_writer, delay_s), pipe(server_reader, client_writer, 0.0))

    return await asyncio.start_server(serve, "127.0.0.1", listen_port)


@contextlib.contextmanager
def slow_s3(latency_s: float) -> Iterator[str]:
    """A moto S3 server (its own process) behind the delaying proxy (a thread of its own); the proxy's URL."""
    moto_port, proxy_port = free_port(), free_port()
    exe = Path(sys.executable).with_name("moto_server")
    moto = subprocess.Popen(
        [str(exe), "-H", "127.0.0.1", "-p", str(moto_port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    loop = asyncio.new_event_loop()
    proxy = loop.run_until_complete(_delay_proxy(proxy_port, moto_port, latency_s))
    thread = threading.Thread(target=loop.run_forever, name="s3-delay-proxy", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                httpx.get(f"http://127.0.0.1:{moto_port}/moto-api/", timeout=2)
                break
            time.sleep(0.1)
        yield f"http://127.0.0.1:{proxy_port}"
    finally:
        loop.call_soon_threadsafe(proxy.close)
        loop.call_soon_threadsafe(loop.stop)
        moto.terminate()
        moto.wait(timeout=30)


async def first_sound(client: httpx.AsyncClient, url: str, reply: str, session_id: str) -> tuple[float, float]:
    """(first text s, first audible sound s) of one turn: the first text is the model's first words reaching the
    client, which the store's reads and writes before the model call delay and the TTS does not."""
    result = await collect_turn(client, url, AgentPayload(prompt=reply), session_id=session_id)
    if (
        not isinstance(result.terminal, AgentEnd)
        or result.time_to_first_audio_s is None
        or result.time_to_first_text_s is None
    ):
        raise RuntimeError(f"the turn failed: {result.terminal}")
    audible = first_audible_sample(pcm16_to_float(result.pcm)) or 0
    return result.time_to_first_text_s, result.time_to_first_audio_s + audible / limits.SAMPLE_RATE


Turns = list[list[tuple[float, float]]]
"""Per conversation, per turn: (first text s, first sound s)."""


async def measure(urls: dict[str, str], conversations: int, turns: int) -> dict[str, Turns]:
    """Per variant, per conversation, the first text and first sound of each turn."""
    sounds: dict[str, Turns] = {name: [] for name in urls}
    replies = iter(REPLIES * (1 + conversations * turns // len(REPLIES)))
    async with httpx.AsyncClient(timeout=600) as client:
        for url in urls.values():
            await first_sound(client, url, "Warm up.", uuid.uuid4().hex * 2)
        for index in range(conversations):
            sessions = {name: f"bench-history-{uuid.uuid4().hex}" for name in urls}
            for name in urls:
                sounds[name].append([])
            for _ in range(turns):
                reply = next(replies)
                for name, url in urls.items():
                    sounds[name][-1].append(await first_sound(client, url, reply, sessions[name]))
            row = ", ".join(
                f"{name} {' '.join(f'{t * 1000:.0f}/{s * 1000:.0f}' for t, s in sounds[name][-1])}" for name in urls
            )
            print(f"  conversation {index}: first text/first sound per turn (ms): {row}", flush=True)
    return sounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=6)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--s3-latency-ms", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=40.0, help="speak model tokens per second")
    args = parser.parse_args()

    with contextlib.ExitStack() as stack, slow_s3(args.s3_latency_ms / 1000) as s3_url:
        os.environ[S3_ENDPOINT_ENV] = s3_url
        bucket = LocalBucket(f"bench-history-{uuid.uuid4().hex[:8]}", s3_url).create()
        tts = stack.enter_context(BackgroundServer(create_tts_app(), name="kokoro"))
        wait_until_ready(tts.http_url)
        stack.callback(BedrockStandIn(ModelRegistry()).start(set_environment=True).stop)
        urls: dict[str, str] = {}
        for name in VARIANTS:
            config = AgentConfig(
                model=ModelKind.SPEAK,
                speak_tokens_per_s=args.rate,
                tts_url=tts.ws_url + TTS_WS_PATH,
                history_bucket=None if name == "memory" else bucket.name,
            )
            app = create_app(config)
            service: VoiceAgentService = app.state.service
            if name == "inline" and service.history is not None:
                service.history.writer = InlineWriter()
            urls[name] = stack.enter_context(BackgroundServer(app, name=f"agent-{name}")).http_url
        sounds = asyncio.run(measure(urls, args.conversations, args.turns))

    def column(name: str, turn: slice, which: int) -> list[float]:
        return [times[which] for turns in sounds[name] for times in turns[turn]]

    rows = []
    for name in VARIANTS:
        row: list[object] = [name]
        for turn in (slice(0, 1), slice(1, None)):
            for which in (0, 1):
                values, base = column(name, turn, which), column("memory", turn, which)
                ratio = statistics.median(a / b for a, b in zip(values, base, strict=True)) if values else float("nan")
                diff = statistics.median(a - b for a, b in zip(values, base, strict=True)) if values else float("nan")
                row += [statistics.median(values) * 1000 if values else float("nan"), diff * 1000, ratio]
        rows.append(row)
    print_table(
        f"First text and first audible sound with and without the history store ({args.conversations} conversations "
        f"x {args.turns} turns, S3 latency {args.s3_latency_ms:g} ms per request, speak model at {args.rate:g} "
        "tokens/s); per turn the variant against memory on the same turn: median difference (ms) and median ratio",
        [
            "variant",
            "1st turn text ms",
            "- memory",
            "/ memory",
            "1st turn sound ms",
            "- memory",
            "/ memory",
            "later text ms",
            "- memory",
            "/ memory",
            "later sound ms",
            "- memory",
            "/ memory",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
