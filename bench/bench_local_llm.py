"""The local Bedrock stand-in's real model, SmolLM2-135M-Instruct, on this machine's CPU: side by side in one run.

1. Load time (from the safetensors cache; the first run on a machine also builds it from the GGUF file).
2. Tokens/s of the model alone, and while the TTS container app synthesizes continuously (the two share the
   cores), and the TTS's own real-time factor alone and beside the model: what a local turn costs each.
3. End to end through the local gateway (RelayStack: real functions, AgentCore data plane, Bedrock stand-in on the
   AWS port, Strands' BedrockModel), bidi vs batch, over a set of spoken-question prompts, interleaved prompt by
   prompt: time to first audio at the client, and the ratio bidi / batch (median of per-prompt ratios).

Usage: ``uv run python bench/bench_local_llm.py [--runs 3] [--max-tokens 48] [--threads N] [--prompts 6]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import threading
import time

import httpx
from benchlib import print_table

from kokoro_server.app import create_app as create_tts_app
from relay_cli.gateway_client import run_turn
from relay_core.agent.events import TurnMode
from relay_core.client.session import TurnOutcome
from relay_local.bedrock import wire
from relay_local.bedrock.models import SMOLLM2_MODEL_ID, ModelRegistry
from relay_local.bedrock.smollm2 import SmolLM2
from relay_local.relay_stack import RelayStack
from relay_local.servers import BackgroundServer
from relay_local.stack import wait_until_ready
from voice_agent.config import AgentConfig, ModelKind

SYSTEM = "You are a helpful voice assistant. Your replies are spoken aloud: answer in short, plain sentences."
PROMPTS = (
    "What is the capital of France?",
    "Why is the sky blue?",
    "Give me one tip for sleeping better.",
    "What is a good name for a cat?",
    "How far away is the moon?",
    "Tell me a fun fact about octopuses.",
    "What should I cook tonight?",
    "How do bees make honey?",
)
TTS_TEXT = "The quick brown fox jumps over the lazy dog, and then it runs far away into the quiet forest."


def _request(prompt: str, max_tokens: int) -> wire.ConverseRequest:
    return wire.ConverseRequest(
        model_id=SMOLLM2_MODEL_ID,
        messages=(wire.ChatMessage("user", prompt),),
        system=SYSTEM,
        inference=wire.InferenceConfig(max_tokens=max_tokens),
    )


def generate_rate(model: SmolLM2, prompts: tuple[str, ...], max_tokens: int) -> tuple[float, float]:
    """Median tokens/s over the prompts and median time to the first token."""
    rates, firsts = [], []
    for prompt in prompts:
        started = time.perf_counter()
        first = None
        count = 0
        for _ in model.generate(_request(prompt, max_tokens), threading.Event()):
            count += 1
            first = first if first is not None else time.perf_counter() - started
        elapsed = time.perf_counter() - started
        rates.append(count / elapsed)
        firsts.append(first or elapsed)
    return statistics.median(rates), statistics.median(firsts)


class TtsLoad:
    """Synthesizes TTS_TEXT over and over through the container app's ``POST /invocations`` (a busy TTS)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.stop = threading.Event()
        self.audio_s = 0.0
        self.busy_s = 0.0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=120) as client:
            while not self.stop.is_set():
                started = time.perf_counter()
                answer = client.post(f"{self.url}/invocations", json={"text": TTS_TEXT, "stream": False})
                answer.raise_for_status()
                self.busy_s += time.perf_counter() - started
                self.audio_s += (len(answer.content) - 44) / 2 / 24000

    def __enter__(self) -> TtsLoad:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self._thread.join()

    @property
    def rtf(self) -> float:
        return self.busy_s / self.audio_s if self.audio_s else float("nan")


def tts_alone(url: str, seconds: float) -> float:
    with TtsLoad(url) as load:
        time.sleep(seconds)
    return load.rtf


async def gateway_ttfa(stack: RelayStack, prompts: tuple[str, ...]) -> dict[TurnMode, list[float]]:
    out: dict[TurnMode, list[float]] = {TurnMode.BIDI: [], TurnMode.BATCH: []}
    for index, prompt in enumerate(prompts):
        for mode in (TurnMode.BIDI, TurnMode.BATCH) if index % 2 == 0 else (TurnMode.BATCH, TurnMode.BIDI):
            user = f"bench-{index}-{mode.value}"  # a fresh conversation per turn: no history builds up
            report = await run_turn(stack.gateway_url, stack.dev_token(user), prompt, mode=mode)
            if report.outcome is not TurnOutcome.COMPLETED or report.time_to_first_audio_s is None:
                raise RuntimeError(f"the turn failed: {report.outcome} {report.code} {report.message}")
            out[mode].append(report.time_to_first_audio_s)
            print(f"  {mode.value:5} {report.time_to_first_audio_s:6.2f} s  {report.text[:70]!r}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="prompts per tokens/s measurement")
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: half the cores)")
    parser.add_argument("--prompts", type=int, default=6, help="prompts through the gateway, each in both modes")
    args = parser.parse_args()

    started = time.perf_counter()
    model = SmolLM2.load(threads=args.threads)
    print(
        f"SmolLM2-135M-Instruct: loaded in {model.load_s:.1f} s ({time.perf_counter() - started:.1f} s with "
        f"imports), {model.threads} torch thread(s)"
    )
    prompts = PROMPTS[: args.runs]
    generate_rate(model, prompts[:1], 8)  # warm-up
    alone, first_alone = generate_rate(model, prompts, args.max_tokens)

    with BackgroundServer(create_tts_app(), name="kokoro") as tts:
        wait_until_ready(tts.http_url)
        tts_rtf_alone = tts_alone(tts.http_url, 8.0)
        with TtsLoad(tts.http_url) as load:
            beside, first_beside = generate_rate(model, prompts, args.max_tokens)
        tts_rtf_beside = load.rtf
    print_table(
        "SmolLM2 and the TTS, each alone and side by side",
        ["what", "alone", "beside the other", "ratio"],
        [
            ["SmolLM2 tokens/s", f"{alone:.1f}", f"{beside:.1f}", f"{beside / alone:.2f}"],
            [
                "SmolLM2 first token, s",
                f"{first_alone:.2f}",
                f"{first_beside:.2f}",
                f"{first_beside / first_alone:.2f}",
            ],
            [
                "TTS real-time factor",
                f"{tts_rtf_alone:.2f}",
                f"{tts_rtf_beside:.2f}",
                f"{tts_rtf_beside / tts_rtf_alone:.2f}",
            ],
        ],
    )

    registry = ModelRegistry()
    registry.add(model)  # the model loaded above, not a second copy
    config = AgentConfig(model=ModelKind.BEDROCK, model_id=SMOLLM2_MODEL_ID)
    print(f"\nthrough the local gateway (SmolLM2 via BedrockModel), {args.prompts} prompts, bidi and batch each:")
    with RelayStack(agent_config=config, models=registry) as stack:
        samples = asyncio.run(gateway_ttfa(stack, PROMPTS[: args.prompts]))
    bidi, batch = samples[TurnMode.BIDI], samples[TurnMode.BATCH]
    ratios = [b / a for b, a in zip(bidi, batch, strict=True)]
    print_table(
        "Time to first audio through the local gateway",
        ["mode", "TTFA median, s", "min", "max"],
        [[m.value, f"{statistics.median(v):.2f}", f"{min(v):.2f}", f"{max(v):.2f}"] for m, v in samples.items()],
    )
    print(f"bidi / batch time to first audio (median of per-prompt ratios): {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
