"""What the SageMaker path costs over the direct WebSocket, measured side by side in one run (loopback).

The real TTS container app (int8 Kokoro-82M on CPU) is reached two ways, interleaved so machine noise hits both:
- ``ws``: the agent's ``ws`` transport, a plain WebSocket to the container;
- ``sagemaker``: the agent's ``sagemaker`` transport (real SDK 0.12, awscrt, TLS + HTTP/2, SigV4 on every event)
  through the local front end (``relay_local.sagemaker_frontend``), which checks every signature.

Measures (medians): a protocol round trip with no synthesis (a ``synthesize`` the container rejects at once
with an ``error`` message), time to first PCM for one short sentence, and the cost of opening a session: a
fresh SDK client + TLS handshake per session (``reuse_client=False``) against a new stream on the client the
transport keeps across sessions (the default).

Usage: ``uv run python bench/bench_sagemaker_frontend.py [--rounds 30] [--turns 5]`` (``make bench-sagemaker``).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import tempfile
import time
from pathlib import Path

import boto3
from benchlib import median, print_table

from kokoro_server.app import create_app
from relay_local.sagemaker_frontend import SageMakerFrontEnd
from relay_local.servers import BackgroundServer
from relay_local.stack import TTS_WS_PATH, wait_until_ready
from relay_transport.base import TtsConnection, TtsTransport
from relay_transport.sagemaker import SageMakerTransport
from relay_transport.ws import WsTransport

_ids = itertools.count()


def rejected() -> str:
    """A ``synthesize`` the container refuses at once (speed out of range): a round trip with no synthesis."""
    return json.dumps({"type": "synthesize", "text": "x", "speed": 9.0, "request_id": f"rt-{next(_ids)}"})


def sentence() -> str:
    """One short sentence under a fresh request id (a session refuses a request id it has seen)."""
    return json.dumps({"type": "synthesize", "text": "Hello there, this is Kokoro.", "request_id": f"fa-{next(_ids)}"})


async def round_trip(connection: TtsConnection) -> float:
    start = time.perf_counter()
    await connection.send(rejected())
    frame = await connection.receive()
    if not (isinstance(frame, str) and json.loads(frame)["type"] == "error"):
        raise RuntimeError(f"expected an error message for a rejected request, got {frame!r:.80}")
    return time.perf_counter() - start


async def first_audio(connection: TtsConnection) -> float:
    start = time.perf_counter()
    await connection.send(sentence())
    first = 0.0
    while True:
        frame = await connection.receive()
        if isinstance(frame, bytes) and not first:
            first = time.perf_counter() - start
        if isinstance(frame, str):
            message = json.loads(frame)
            if message["type"] == "synthesis_complete":
                return first
            if message["type"] == "error":
                raise RuntimeError(f"the container refused the sentence: {message}")


OPEN_ONLY = "sagemaker-fresh"
"""The transport measured only for the cost of opening a session (once open, a stream is a stream)."""


async def measure(transports: dict[str, TtsTransport], rounds: int, turns: int) -> dict[str, dict[str, list[float]]]:
    results: dict[str, dict[str, list[float]]] = {name: {"rtt": [], "ttfa": [], "open": []} for name in transports}
    connections = {name: await transport.connect() for name, transport in transports.items() if name != OPEN_ONLY}
    for _ in range(rounds):
        for name, connection in connections.items():
            results[name]["rtt"].append(await round_trip(connection))
    for _ in range(turns):
        for name, connection in connections.items():
            results[name]["ttfa"].append(await first_audio(connection))
    for connection in connections.values():
        await connection.aclose()
    for _ in range(turns):
        for name, transport in transports.items():
            start = time.perf_counter()
            connection = await transport.connect()
            await round_trip(connection)
            results[name]["open"].append(time.perf_counter() - start)
            await connection.aclose()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--turns", type=int, default=5)
    args = parser.parse_args()
    with BackgroundServer(create_app(), name="kokoro") as tts, tempfile.TemporaryDirectory() as tls_dir:
        wait_until_ready(tts.http_url)
        url = tts.ws_url + TTS_WS_PATH
        with SageMakerFrontEnd(url, tls_dir=Path(tls_dir)) as front:
            os.environ["SSL_CERT_FILE"] = str(front.ca_file)  # this process talks to nothing else over TLS
            credentials = front.credentials
            session = boto3.Session(
                aws_access_key_id=credentials.access_key_id,
                aws_secret_access_key=credentials.secret_access_key,
                region_name=credentials.region,
            )

            def sagemaker(*, reuse_client: bool) -> SageMakerTransport:
                return SageMakerTransport(
                    front.endpoint_name,
                    front.region,
                    endpoint_uri=front.endpoint_url,
                    session=session,
                    reuse_client=reuse_client,
                )

            transports: dict[str, TtsTransport] = {
                "ws": WsTransport(url),
                "sagemaker": sagemaker(reuse_client=True),
                OPEN_ONLY: sagemaker(reuse_client=False),
            }
            results = asyncio.run(measure(transports, args.rounds, args.turns))
    ms = 1000.0
    rows: list[list[object]] = []
    for what, label in (("rtt", "round trip, no synthesis"), ("ttfa", "first PCM, one sentence")):
        ws, sm = median(results["ws"][what]) * ms, median(results["sagemaker"][what]) * ms
        rows.append([label, f"{ws:.2f}", f"{sm:.2f}", f"{sm - ws:+.2f}", f"{sm / ws:.2f}x"])
    open_ws = median(results["ws"]["open"]) * ms
    open_fresh = median(results[OPEN_ONLY]["open"]) * ms
    open_reused = median(results["sagemaker"]["open"]) * ms
    rows.append(
        [
            "open + round trip, fresh client",
            f"{open_ws:.2f}",
            f"{open_fresh:.2f}",
            f"{open_fresh - open_ws:+.2f}",
            f"{open_fresh / open_ws:.2f}x",
        ]
    )
    rows.append(
        [
            "open + round trip, reused client",
            f"{open_ws:.2f}",
            f"{open_reused:.2f}",
            f"{open_reused - open_ws:+.2f}",
            f"{open_reused / open_ws:.2f}x",
        ]
    )
    print_table(
        f"SageMaker front end vs direct WebSocket (ms, medians; {args.rounds} round trips, {args.turns} turns)",
        ["measure", "ws", "sagemaker", "added", "ratio"],
        rows,
    )


if __name__ == "__main__":
    main()
