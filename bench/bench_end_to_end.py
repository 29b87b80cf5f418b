"""End to end, as a user hears it: bidi first sound vs batch first byte, through the agent and through the gateway.

What issue 29 item 2 measures. The real path on loopback: a ``kokoro-server`` process (int8 ONNX, its defaults:
the decoder streamed), a ``voice-agent`` process speaking through it with its defaults (word timings always asked
for, the first-fragment cut) and the ``speak`` model (the prompt echoed at ``--rate`` tokens/s, 40 by default,
through the local Bedrock stand-in), and the whole local relay (``RelayStack``: API Gateway WebSocket, the real
functions, moto) in front of that agent. For each reply of the corpus (``bench/corpus.py``'s MORE_REPLIES, the
replies no policy was tuned on: held-out style), interleaved:

- direct: bidi and batch turns straight to the agent's ``/invocations`` (``relay speak``'s path);
- gateway: bidi and batch turns through the gateway, timed at the client from ``sendMessage``.

Bidi's first SOUND (its first audio byte plus the playback time to its first audible sample, -40 dBFS, as a client
playing from the first byte hears it) over batch's first BYTE, per reply; the median is issue 29's figure (target
<= 0.40). Beside it: the floor a TTS that took no time would give on the same replies (when the agent has written
its first piece / the whole reply, ``bench_agent_ttfa.written_at``).

``--other-src DIR`` adds a container from another checkout (e.g. ``git worktree add /tmp/before <commit>``) with an
agent of its own, direct path only, interleaved with the rest: before and after in one run.

    uv run python bench/bench_end_to_end.py [--replies 12] [--rate 40] [--other-src /tmp/before] [--no-gateway]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx
from bench_agent_ttfa import written_at
from benchlib import print_table, run_agent, run_server
from corpus import MORE_REPLIES

from kokoro_server.silence import first_audible_sample, pcm16_to_float
from relay_cli.agent_client import collect_turn
from relay_cli.cli import quiet_agentcore_access_log
from relay_cli.gateway_client import run_turn
from relay_core import limits
from relay_core.agent.events import AgentEnd, AgentPayload, TurnMode
from relay_core.client.session import TurnOutcome
from relay_local.relay_stack import RelayStack


@dataclass(frozen=True, slots=True)
class Heard:
    """One turn at the client: its first audio byte and its first audible sound (seconds after the request)."""

    first_byte_s: float
    first_sound_s: float


def _heard(first_byte_s: float | None, pcm: bytes, what: str) -> Heard:
    if first_byte_s is None:
        raise RuntimeError(f"{what}: no audio")
    audible = first_audible_sample(pcm16_to_float(pcm)) or 0
    return Heard(first_byte_s, first_byte_s + audible / limits.SAMPLE_RATE)


async def direct(client: httpx.AsyncClient, agent_url: str, reply: str, mode: TurnMode) -> Heard:
    result = await collect_turn(client, agent_url, AgentPayload(prompt=reply, mode=mode))
    if not isinstance(result.terminal, AgentEnd):
        raise RuntimeError(f"the direct turn failed: {result.terminal}")
    return _heard(result.time_to_first_audio_s, result.pcm, "direct turn")


async def gateway(stack: RelayStack, reply: str, mode: TurnMode, user: str) -> Heard:
    report = await run_turn(stack.gateway_url, stack.dev_token(user), reply, mode=mode, timeout_s=480)
    if report.outcome is not TurnOutcome.COMPLETED:
        raise RuntimeError(f"the gateway turn failed: {report.outcome} {report.code} {report.message}")
    return _heard(report.time_to_first_audio_s, report.pcm, "gateway turn")


Paths = dict[str, tuple[str, RelayStack | None]]
"""Per path name: the agent's URL, and the relay stack in front of it for a gateway path (None: direct)."""


async def measure(paths: Paths, replies: list[str]) -> dict[str, list[tuple[Heard, Heard]]]:
    """Per path, per reply: (bidi, batch). Paths take turns reply by reply, so machine noise hits them alike."""
    results: dict[str, list[tuple[Heard, Heard]]] = {name: [] for name in paths}

    async def turn(name: str, reply: str, mode: TurnMode, index: int) -> Heard:
        url, stack = paths[name]
        if stack is None:
            return await direct(client, url, reply, mode)
        return await gateway(stack, reply, mode, user=f"bench-{index}-{mode.value}")

    async with httpx.AsyncClient(timeout=600) as client:
        for name in paths:
            await turn(name, "Warm up.", TurnMode.BIDI, -1)
        for index, reply in enumerate(replies):
            order = list(paths) if index % 2 == 0 else list(paths)[::-1]
            for name in order:
                bidi = await turn(name, reply, TurnMode.BIDI, index)
                batch = await turn(name, reply, TurnMode.BATCH, index)
                results[name].append((bidi, batch))
            line = ", ".join(
                f"{n}: {r[-1][0].first_sound_s:.2f}/{r[-1][1].first_byte_s:.2f} s" for n, r in results.items()
            )
            print(f"  reply {index}: bidi sound / batch byte  {line}", flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replies", type=int, default=12, help="the first N held-out replies (default 12)")
    parser.add_argument("--rate", type=float, default=40.0, help="the speak model's tokens per second (default 40)")
    parser.add_argument("--other-src", type=Path, default=None, help="also a container from this checkout (direct)")
    parser.add_argument("--no-gateway", action="store_true", help="leave out the gateway path")
    args = parser.parse_args(argv)
    quiet_agentcore_access_log()
    replies = list(MORE_REPLIES[: args.replies])
    rate_env = {"VOICE_AGENT_SPEAK_TOKENS_PER_S": f"{args.rate:g}"}
    with contextlib.ExitStack() as servers:
        tts = servers.enter_context(run_server())
        agent = servers.enter_context(run_agent(tts.ws_url, env=rate_env))
        paths: Paths = {"direct": (agent.http_url, None)}
        if not args.no_gateway:
            stack = servers.enter_context(
                RelayStack(agent_url=agent.http_url, function_env={"TURNS_PER_MINUTE": "1000"})
            )
            paths["gateway"] = (agent.http_url, stack)
        if args.other_src is not None:
            src = args.other_src
            path = f"{src / 'containers/kokoro/src'}:{src / 'core/src'}"
            other = servers.enter_context(run_server(env={"PYTHONPATH": path}))
            other_agent = servers.enter_context(run_agent(other.ws_url, env=rate_env))
            paths[f"direct, {src.name}'s container"] = (other_agent.http_url, None)
        results = asyncio.run(measure(paths, replies))
    floors = [first / whole if whole else 1.0 for first, whole in (written_at(r, args.rate) for r in replies)]
    rows = []
    for name, turns in results.items():
        ratios = [bidi.first_sound_s / batch.first_byte_s for bidi, batch in turns]
        rows.append(
            (
                name,
                f"{statistics.median(b.first_sound_s for b, _ in turns) * 1000:.0f}",
                f"{statistics.median(b.first_byte_s for b, _ in turns) * 1000:.0f}",
                f"{statistics.median(a.first_byte_s for _, a in turns) * 1000:.0f}",
                f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})",
                f"{statistics.median(floors):.3f}",
            )
        )
    print_table(
        f"End to end, {len(replies)} held-out replies, speak model at {args.rate:g} tokens/s, agent and container "
        "defaults: bidi first sound vs batch first byte (same run, interleaved)",
        (
            "path",
            "bidi first sound ms",
            "bidi first byte ms",
            "batch first byte ms",
            "bidi sound / batch byte, median (min-max)",
            "floor: instant TTS",
        ),
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
