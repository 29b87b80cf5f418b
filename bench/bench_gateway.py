"""Through the whole local relay vs straight to the agent: time to first audio, and 32 concurrent clients.

The local stack (``relay_local.relay_stack.RelayStack``) runs the real path a phone takes: client → local API
Gateway WebSocket (authorizer, routes) → ``sendMessage`` Lambda → Lambda Invoke (Event) → relay Lambda →
AgentCore data plane → agent app (offline ``speak`` model, 40 tokens/s) → TTS container app (int8 Kokoro-82M on
CPU) → back through ``@connections``. "Direct" is the same agent app called over HTTP as ``relay speak`` does.
Runs are interleaved (direct, gateway, direct, gateway ...) on the same replies so machine noise hits both alike.

1. TTFA, bidi and batch, direct vs gateway: medians, the ratio gateway/direct and the added milliseconds
   (target: the gateway path adds at most 5 % to time to first audio).
2. ``--clients`` concurrent clients (distinct users) through the gateway: each turn's PCM must be byte-identical
   to the same reply run alone; no message over 32 KB; every turn's seqs exactly 0..n-1 (nothing lost or
   duplicated). Prints the check results and the timings.

Usage: ``uv run python bench/bench_gateway.py [--runs 3] [--clients 32] [--crowd short|long]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import threading
import time
import warnings
from typing import Any

import httpx
from benchlib import REFERENCE_TEXT, print_table, run_agent, run_server

from relay_cli.agent_client import collect_turn
from relay_cli.cli import quiet_agentcore_access_log
from relay_cli.gateway_client import TurnReport, open_connection, run_turn
from relay_core import limits
from relay_core.agent.events import AgentEnd, AgentPayload, TurnMode
from relay_core.client.session import ClientSession, TurnOutcome
from relay_local.relay_stack import RelayStack

CORPUS = (
    REFERENCE_TEXT,
    "Sure. Your flight leaves at nine forty from gate twelve. Boarding starts thirty minutes before departure.",
    "Good question! The short answer is yes. The longer answer depends on how much memory your phone has left.",
)
"""Realistic replies (the speak model echoes the prompt as its reply)."""

SHORT_CORPUS = (
    "Sure, I can do that.",
    "Your table is booked for eight. See you then!",
    "It is twelve degrees and cloudy right now.",
    "Done. I moved the meeting to Thursday at three.",
)
"""Short replies, the common case of a voice agent's turn: ``--crowd short`` (the default) sends these, so that 32
simultaneous turns fit a 2-core machine's synthesis budget; ``--crowd long`` sends :data:`CORPUS`."""


async def direct_ttfa(client: httpx.AsyncClient, agent_url: str, text: str, mode: TurnMode) -> tuple[float, float]:
    """The client's time to first audio, and the part of it the path added (minus the agent's own, from its
    ``agent_end``)."""
    result = await collect_turn(client, agent_url, AgentPayload(prompt=text, mode=mode))
    terminal = result.terminal
    if not isinstance(terminal, AgentEnd) or result.time_to_first_audio_s is None or terminal.first_audio_s is None:
        raise RuntimeError(f"the direct turn failed: {terminal}")
    return result.time_to_first_audio_s, result.time_to_first_audio_s - terminal.first_audio_s


TURN_TIMEOUT_S = 480.0
"""Per turn: 32 simultaneous turns of speech on a shared 2-core machine take minutes of synthesis."""


async def gateway_turn(stack: RelayStack, user: str, text: str, mode: TurnMode) -> TurnReport:
    report = await run_turn(stack.gateway_url, stack.dev_token(user), text, mode=mode, timeout_s=TURN_TIMEOUT_S)
    if report.outcome is not TurnOutcome.COMPLETED or report.time_to_first_audio_s is None:
        raise RuntimeError(f"the gateway turn failed: {report.outcome} {report.code} {report.message}")
    return report


class AwsCallTimer:
    """Times every AWS call the gateway functions make (botocore's before-call / after-call events on boto3's
    default session, so every client built after :meth:`install` reports): which calls stand between a client's
    ``sendMessage`` and the agent's first byte, and how long each takes here."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, float, float]] = []
        self._started: dict[int, float] = {}

    def install(self) -> None:
        import boto3  # noqa: PLC0415 - only this bench option needs it

        if boto3.DEFAULT_SESSION is None:
            boto3.setup_default_session()
        assert boto3.DEFAULT_SESSION is not None
        events = boto3.DEFAULT_SESSION.events  # every boto3.client() built from now on emits these
        events.register("before-call", self._before)
        events.register("after-call", self._after)

    def _before(self, **_: object) -> None:
        self._started[threading.get_ident()] = time.perf_counter()

    def _after(self, model: Any, **_: object) -> None:
        started = self._started.pop(threading.get_ident(), None)
        if started is not None:
            self.calls.append((f"{model.service_model.service_name}.{model.name}", started, time.perf_counter()))


async def measure_stages(stack: RelayStack, timer: AwsCallTimer, turns: int) -> None:
    """Gateway turns, each timed call by call from the client's sendMessage to the agent's stream opening."""
    per_call: dict[str, list[float]] = {}
    to_agent: list[float] = []
    for turn in range(turns):
        websocket = await open_connection(stack.gateway_url, stack.dev_token(f"stages-{turn}"))
        try:
            session = ClientSession()
            timer.calls.clear()
            sent = time.perf_counter()
            await websocket.send(session.send_message(SHORT_CORPUS[turn % len(SHORT_CORPUS)]))
            while not session.turns[-1].finished:
                session.receive(await websocket.recv())
        finally:
            await websocket.close()
        opened = [c for c in timer.calls if c[0] == "bedrock-agentcore.InvokeAgentRuntime"]
        if not opened:
            raise RuntimeError("the relay never called the agent")
        to_agent.append(opened[0][2] - sent)
        for name, start, end in timer.calls:
            if end <= opened[0][2]:
                per_call.setdefault(name, []).append((end - start) * 1000)
    rows = [[name, len(v) / turns, statistics.median(v)] for name, v in per_call.items()]
    rows.append(["from sendMessage sent to the agent's stream open (ms)", 1, statistics.median(to_agent) * 1000])
    print_table(
        f"AWS calls between a client's sendMessage and the agent's stream, {turns} turns (median ms per call)",
        ["call", "per turn", "median ms"],
        rows,
    )


async def measure_ttfa(stack: RelayStack, runs: int) -> dict[tuple[str, TurnMode], list[float]]:
    samples: dict[tuple[str, TurnMode], list[float]] = {}
    async with httpx.AsyncClient() as client:
        for run in range(runs):
            for index, text in enumerate(CORPUS):
                for mode in (TurnMode.BIDI, TurnMode.BATCH):
                    # a fresh user per turn: the per-user rate limit (TURNS_PER_MINUTE) is not what we measure
                    user = f"ttfa-{run}-{index}-{mode}"
                    if (run + index) % 2:  # alternate which side goes first, so neither always follows the other
                        via = await gateway_turn(stack, user, text, mode)
                        direct, direct_path = await direct_ttfa(client, stack.agent_url, text, mode)
                    else:
                        direct, direct_path = await direct_ttfa(client, stack.agent_url, text, mode)
                        via = await gateway_turn(stack, user, text, mode)
                    via_ttfa = via.time_to_first_audio_s or 0.0
                    samples.setdefault(("direct", mode), []).append(direct)
                    samples.setdefault(("gateway", mode), []).append(via_ttfa)
                    samples.setdefault(("connect", mode), []).append(via.connect_s)
                    samples.setdefault(("direct path", mode), []).append(direct_path)
                    samples.setdefault(("gateway path", mode), []).append(via_ttfa - (via.agent_first_audio_s or 0.0))
                    print(
                        f"  run {run} reply {index} {mode}: direct {direct * 1000:.0f} ms, "
                        f"gateway {(via.time_to_first_audio_s or 0) * 1000:.0f} ms "
                        f"(after a {via.connect_s * 1000:.0f} ms connect)",
                        file=sys.stderr,
                    )
    return samples


async def concurrent_clients(stack: RelayStack, clients: int, corpus: tuple[str, ...]) -> None:
    alone = {text: (await gateway_turn(stack, f"alone-{i}", text, TurnMode.BIDI)).pcm for i, text in enumerate(corpus)}
    started = time.perf_counter()
    texts = [corpus[i % len(corpus)] for i in range(clients)]
    reports = await asyncio.gather(
        *(gateway_turn(stack, f"crowd-{i}", text, TurnMode.BIDI) for i, text in enumerate(texts))
    )
    wall = time.perf_counter() - started
    identical = sum(r.pcm == alone[t] for r, t in zip(reports, texts, strict=True))
    contiguous = sum(r.seqs == list(range(len(r.seqs))) and r.duplicates == 0 for r in reports)
    largest = max(r.largest_message_bytes for r in reports)
    ttfa = [r.time_to_first_audio_s or 0.0 for r in reports]
    print_table(
        f"{clients} concurrent clients through the local gateway (bidi, {len(corpus)} distinct replies)",
        ["check / figure", "value"],
        [
            ["turns completed", f"{len(reports)}/{clients}"],
            ["PCM identical to the same reply alone", f"{identical}/{clients}"],
            ["seqs exactly 0..n-1, no duplicate", f"{contiguous}/{clients}"],
            ["largest message (bytes; quota 32768)", largest],
            ["messages received in all", sum(r.messages for r in reports)],
            ["duplicates received (ignored by seq)", sum(r.duplicates for r in reports)],
            [
                "resumes after a silence / reconnects",
                f"{sum(r.stall_resumes for r in reports)} / {sum(r.reconnects for r in reports)}",
            ],
            ["TTFA median (s)", statistics.median(ttfa)],
            ["TTFA max (s)", max(ttfa)],
            ["wall time, all turns (s)", wall],
        ],
    )
    ok = identical == clients and contiguous == clients and largest <= limits.APIGW_FRAME_BYTES
    print(f"\nconcurrency checks: {'PASS' if ok else 'FAIL'}")
    if not ok:
        raise SystemExit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--runs", type=int, default=3, help="passes over the corpus per mode (default 3; 0 = skip the TTFA part)"
    )
    parser.add_argument("--clients", type=int, default=32, help="concurrent clients (default 32; 0 = skip)")
    parser.add_argument(
        "--crowd", choices=["short", "long"], default="short", help="the concurrent clients' replies (default short)"
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run the agent and the TTS container in this process too (default: processes of their own, as in AWS, "
        "where they are separate containers from the gateway's functions)",
    )
    parser.add_argument(
        "--stages", type=int, default=0, help="first time N gateway turns AWS call by call, up to the agent's stream"
    )
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    quiet_agentcore_access_log()
    # The TTS container admits 4 sessions per core by default (1013 beyond); a SageMaker endpoint scales out
    # instead. Admit every client here, so the run measures the gateway, not the container's admission.
    os.environ.setdefault("KOKORO_MAX_SESSIONS", str(max(args.clients, 1)))
    with contextlib.ExitStack() as servers:
        agent_url = None
        if not args.in_process:
            tts = servers.enter_context(run_server())
            agent_url = servers.enter_context(run_agent(tts.ws_url)).http_url
        stack = servers.enter_context(RelayStack(agent_url=agent_url, function_env={"TURNS_PER_MINUTE": "1000"}))
        timer = AwsCallTimer()
        if args.stages:
            timer.install()  # before the functions' first invocation builds their clients
        print(
            "agent and TTS container: "
            + ("in this process (--in-process)" if args.in_process else "processes of their own, as in AWS"),
            file=sys.stderr,
        )
        if args.stages:
            asyncio.run(measure_stages(stack, timer, args.stages))
        if args.runs:
            ttfa_table(asyncio.run(measure_ttfa(stack, args.runs)), args.runs)
        if args.clients:
            corpus = SHORT_CORPUS if args.crowd == "short" else CORPUS
            asyncio.run(concurrent_clients(stack, args.clients, corpus))


def ttfa_table(samples: dict[tuple[str, TurnMode], list[float]], runs: int) -> None:
    rows, path_rows = [], []
    for mode in (TurnMode.BIDI, TurnMode.BATCH):
        direct = statistics.median(samples[("direct", mode)])
        via = statistics.median(samples[("gateway", mode)])
        pairs = zip(samples[("gateway", mode)], samples[("direct", mode)], strict=True)
        paired = statistics.median(g - d for g, d in pairs)
        connect = statistics.median(samples[("connect", mode)])
        rows.append(
            [mode.value, direct, via, via / direct, f"{paired * 1000:+.0f}", f"{paired / direct:+.1%}", connect * 1000]
        )
        direct_path = statistics.median(samples[("direct path", mode)])
        via_path = statistics.median(samples[("gateway path", mode)])
        path_rows.append(
            [
                mode.value,
                direct_path * 1000,
                via_path * 1000,
                (via_path - direct_path) * 1000,
                (via_path - direct_path) / direct,
            ]
        )
    print_table(
        f"Time to first audio, direct to the agent vs through the local gateway from sendMessage on an open "
        f"connection (medians of {runs * len(CORPUS)} turns each; 'added' = median of the per-reply differences)",
        [
            "mode",
            "direct (s)",
            "gateway (s)",
            "gateway / direct",
            "added (ms)",
            "added / direct",
            "connect before (ms)",
        ],
        rows,
    )
    print_table(
        "What each path adds to the agent's own time to first audio (client TTFA minus the agent's first_audio_s "
        "from its agent_end: the agent's speed, which varies turn to turn, taken out)",
        ["mode", "direct HTTP/SSE (ms)", "gateway + Lambdas + AgentCore (ms)", "gateway's own (ms)", "/ direct TTFA"],
        path_rows,
    )
    bidi = statistics.median(samples[("gateway", TurnMode.BIDI)])
    batch = statistics.median(samples[("gateway", TurnMode.BATCH)])
    print(f"\nthrough the gateway, bidi / batch TTFA: {bidi / batch:.2f}")


if __name__ == "__main__":
    main()
