"""Shared pieces of the benchmarks: the reference text, a real server process, a WebSocket TTS client.

Benchmarks print ratios measured side by side in one run on the same machine, so that a noisy, shared
machine affects both sides alike; absolute figures are reported for context only.
"""

from __future__ import annotations

import contextlib
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from websockets.asyncio.client import connect

from kokoro_server.silence import first_audible_sample, pcm16_to_float
from relay_core import limits
from relay_core.speech_options import SpeechOptions
from relay_core.tts.client import AudioReceived, RequestEnded, TtsClientSession
from relay_core.tts.messages import SESSION_PATH, SynthesisComplete, Synthesize
from relay_local.stack import wait_until_ready

REFERENCE_TEXT = (
    "As soon as the agent starts writing, its voice starts speaking. "
    "Each sentence goes to the speech model the moment it is complete. "
    "Audio streams back to the browser in small chunks, as it is made. "
    "You will hear the first words long before the whole reply is finished."
)
"""266 characters in four sentences of similar length (63-70 characters), like the reference experiment's
267-character, four-sentence text. It opens with a clause of five words, as LLM replies often do, which the
first-fragment policy can send early. Used by every TTFA benchmark (and as the speak model's reply)."""

WS_PATH = SESSION_PATH


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class ServerProcess:
    """A real ``kokoro-server`` process on loopback."""

    process: subprocess.Popen[bytes]
    port: int
    started_at: float
    healthy_after_s: float = 0.0

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}{WS_PATH}"


@contextlib.contextmanager
def _serve(command: list[str], *, env: dict[str, str] | None, port: int, timeout_s: float) -> Iterator[ServerProcess]:
    """Run ``command`` (a server listening on loopback ``port``), wait for a healthy /ping, stop it afterwards."""
    started = time.perf_counter()
    process = subprocess.Popen(
        command, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    server = ServerProcess(process=process, port=port, started_at=started)
    try:
        wait_until_ready(server.http_url, timeout_s=timeout_s, poll_s=0.02, alive=lambda: process.poll() is None)
        server.healthy_after_s = time.perf_counter() - started
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def run_server(
    *args: str, env: dict[str, str] | None = None, timeout_s: float = 120.0, schedule: str | None = None
) -> Iterator[ServerProcess]:
    """Start ``kokoro-server`` on a free loopback port, wait for a healthy /ping, stop it afterwards. ``schedule``:
    the chunk schedule its onnx engine decodes on instead of the default (bench/stream_options.py's spelling)."""
    port = free_port()
    launcher = [str(Path(sys.executable).with_name("kokoro-server"))]
    if schedule is not None:
        launcher = [sys.executable, str(Path(__file__).with_name("stream_options.py")), "serve", schedule, "--"]
    with _serve(
        [*launcher, "--host", "127.0.0.1", "--port", str(port), *args], env=env, port=port, timeout_s=timeout_s
    ) as server:
        yield server


@contextlib.contextmanager
def run_agent(
    tts_ws_url: str, *, env: dict[str, str] | None = None, timeout_s: float = 60.0
) -> Iterator[ServerProcess]:
    """Start ``voice-agent`` (the speak model: ``local.echo`` through the Bedrock API) on a free loopback port,
    speaking through the TTS session at ``tts_ws_url``, its Bedrock calls going to a local Bedrock stand-in served
    from this process (``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` in its environment); wait for a healthy /ping, stop both
    afterwards. In AWS the agent runs in its own microVM: as a process of its own here, its work and a caller's (e.g.
    the gateway's functions) do not share one interpreter."""
    from relay_local.bedrock import BedrockStandIn, bedrock_environment  # noqa: PLC0415

    port = free_port()
    exe = Path(sys.executable).with_name("voice-agent")
    command = [str(exe), "--host", "127.0.0.1", "--port", str(port), "--tts-url", tts_ws_url, "--log-level", "WARNING"]
    with BedrockStandIn() as bedrock:
        agent_env = {**bedrock_environment(bedrock.endpoint_url), **(env or {})}
        with _serve(command, env=agent_env, port=port, timeout_s=timeout_s) as server:
            yield server


@contextlib.contextmanager
def run_baseline(timeout_s: float = 120.0) -> Iterator[ServerProcess]:
    """Start bench/baseline_server.py (one whole request at a time, one global lock) on a free loopback port."""
    port = free_port()
    script = Path(__file__).with_name("baseline_server.py")
    with _serve([sys.executable, str(script), "--port", str(port)], env=None, port=port, timeout_s=timeout_s) as server:
        yield server


@dataclass
class Listener:
    """A client that starts playing at the first non-empty piece of audio and plays on as pieces arrive: when it first
    hears sound (the first audible sample, -40 dBFS, ``kokoro_server.silence``), and how long it waits with nothing
    to play (each stall, and all of them together). The one playback model of the streaming benchmarks."""

    sample_rate: int = limits.SAMPLE_RATE
    start_s: float | None = None
    play_end_s: float = 0.0
    """When the audio received so far runs out, on the wall clock."""
    stall_s: float = 0.0
    longest_stall_s: float = 0.0
    first_sound_s: float | None = None
    pcm: bytearray = field(default_factory=bytearray)

    def arrive(self, pcm: bytes, now: float) -> None:
        """``pcm`` (s16le) arrived at ``now`` (seconds on the benchmark's clock)."""
        if not pcm:
            return
        if self.start_s is None:
            self.start_s = self.play_end_s = now
        elif now > self.play_end_s:
            self.stall_s += now - self.play_end_s
            self.longest_stall_s = max(self.longest_stall_s, now - self.play_end_s)
            self.play_end_s = now
        self.pcm.extend(pcm)
        self.play_end_s += len(pcm) / (limits.SAMPLE_WIDTH_BYTES * self.sample_rate)
        if self.first_sound_s is None:
            first = first_audible_sample(pcm16_to_float(bytes(self.pcm)), self.sample_rate)
            if first is not None:
                self.first_sound_s = max(now, self.start_s + first / self.sample_rate + self.stall_s)


@dataclass
class RequestAudio:
    """What a client received for one request: its PCM and when the first byte and the first sound came."""

    first_byte_s: float | None = None
    first_sound_s: float | None = None
    """When the first audible sample (-40 dBFS, kokoro_server.silence) is heard by a client that starts playing at
    the first byte: ``max(arrival of the message holding it, first byte + its offset in the audio)``."""
    pcm: bytearray = field(default_factory=bytearray)
    done_s: float = 0.0


@dataclass
class SessionAudio:
    """One session's requests, in the order sent, with the times measured from the first send."""

    requests: list[RequestAudio]
    done_s: float = 0.0

    @property
    def first_sound_s(self) -> float:
        """When the session's listener first hears something (its first request's first sound)."""
        return next(r.first_sound_s for r in self.requests if r.first_sound_s is not None)

    @property
    def pcm(self) -> bytes:
        return b"".join(bytes(r.pcm) for r in self.requests)


async def speak_session(ws_url: str, pieces: Sequence[str], *, voice: str | None = None) -> SessionAudio:
    """One session: every piece sent at once as its own request (pipelined, as the agent does), then close.
    Records each request's PCM, first byte and first sound."""
    client = TtsClientSession()
    out = SessionAudio(requests=[RequestAudio() for _ in pieces])
    by_id = {f"p{i}": out.requests[i] for i in range(len(pieces))}
    async with connect(ws_url, max_size=None, open_timeout=120) as ws:
        start = time.perf_counter()
        for i, text in enumerate(pieces):
            await ws.send(
                client.synthesize(Synthesize(text=text, options=SpeechOptions(voice), request_id=f"p{i}")).encode()
            )
        await ws.send(client.close())
        while not client.idle:
            for event in client.receive_frame(await ws.recv()):
                now = time.perf_counter() - start
                if isinstance(event, AudioReceived):
                    request = by_id[event.request_id]
                    if request.first_byte_s is None:
                        request.first_byte_s = now
                    request.pcm.extend(event.pcm)
                    if request.first_sound_s is None:
                        first = first_audible_sample(pcm16_to_float(bytes(request.pcm)))
                        if first is not None:
                            request.first_sound_s = max(now, request.first_byte_s + first / limits.SAMPLE_RATE)
                elif isinstance(event, RequestEnded):
                    if not isinstance(event.outcome, SynthesisComplete):
                        raise RuntimeError(f"request {event.request_id} did not complete: {event.outcome}")
                    by_id[event.request_id].done_s = now
        out.done_s = time.perf_counter() - start
    return out


@dataclass
class SessionTiming:
    """What one client observed on one TTS session."""

    first_audio_s: float | None = None
    done_s: float = 0.0
    audio_bytes: int = 0
    per_request_first_audio_s: list[float] = field(default_factory=list)

    @property
    def audio_s(self) -> float:
        return self.audio_bytes / (limits.SAMPLE_WIDTH_BYTES * limits.SAMPLE_RATE)


async def speak_pieces(ws_url: str, pieces: Sequence[str], *, voice: str | None = None) -> SessionTiming:
    """Open one session, send every piece as its own synthesize request at once, then close; time it.

    Times are from the moment the first request is sent."""
    client = TtsClientSession()
    timing = SessionTiming()
    async with connect(ws_url, max_size=None) as ws:
        start = time.perf_counter()
        for i, text in enumerate(pieces):
            await ws.send(
                client.synthesize(Synthesize(text=text, options=SpeechOptions(voice), request_id=f"p{i}")).encode()
            )
        await ws.send(client.close())
        seen: set[str] = set()
        while not client.idle:
            for event in client.receive_frame(await ws.recv()):
                if isinstance(event, AudioReceived):
                    now = time.perf_counter() - start
                    if timing.first_audio_s is None:
                        timing.first_audio_s = now
                    if event.request_id not in seen:
                        seen.add(event.request_id)
                        timing.per_request_first_audio_s.append(now)
                    timing.audio_bytes += len(event.pcm)
                elif isinstance(event, RequestEnded) and not isinstance(event.outcome, SynthesisComplete):
                    raise RuntimeError(f"request {event.request_id} did not complete: {event.outcome}")
        timing.done_s = time.perf_counter() - start
    return timing


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def print_table(title: str, header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """A Markdown table, so the output pastes into docs/benchmarks.md as is."""
    print(f"\n### {title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(f"{c:.3f}" if isinstance(c, float) else str(c) for c in row) + " |")
