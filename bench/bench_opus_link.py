"""PCM vs Opus to clients over a slow link, and what Opus does to intelligibility (issue 32 §5).

bench/bench_opus_wire.py measures the bytes and API Gateway messages per second of speech; this one measures what a
listener on a phone's link gets, side by side in one run:

1. **Link** (``link``): the whole local relay (``relay_local.relay_stack.RelayStack``: the local API Gateway, the
   REAL gateway functions, the agent app and the TTS container speaking ``af_heart``, each in a process of its own),
   reached through :class:`LinkProxy`, an asyncio TCP proxy on 127.0.0.1 that carries each direction over a link
   of a given rate (a serial link: each byte waits for those before it, the queue in front is unbounded, as a
   mobile network's buffers are deep) with a fixed one-way delay. For each link (unlimited, 512, 256, 128 kbit/s)
   and each reply, one ``audio: pcm`` turn and one ``audio: opus`` turn (``relay_cli.gateway_client.run_turn``,
   Opus decoded with PyAV by ``relay_cli.opus_decode``); from each audio message's arrival time and its place on
   the turn's PCM timeline:

   - **first audible sample**: when the message holding the turn's first sample above -40 dBFS
     (``kokoro_server.silence``) arrived, from sending ``sendMessage``;
   - **stalls** under :class:`FixedBufferPlayer`: playback starts once 200 ms of audio is buffered (or the turn's
     audio is all there), plays on in real time, and on an underrun stops and waits again for 200 ms; stalls per
     minute of speech and the seconds spent stalled. (A FIXED start-up buffer: the JS library's adaptive buffer,
     issue 32 §3, is part 2.)

2. **The JS library's adaptive sink** (``js``): sessions of turns through the same proxy (links slower than real time
   for the format: PCM at 384 and 256 kbit/s, Opus at 24 kbit/s, and the open link), each turn's arrivals recorded
   (text, audio messages with their bytes on the wire, the audio's end: seconds after ``sendMessage``) and replayed
   through ``@kokoro-relay/client``'s ``WebAudioSink`` on a simulated clock (``bench/js_sink_replay.mjs``, node), a
   session's turns one after another on one sink as a page plays them: stalls per minute of speech and the start-up
   wait of **first turns** (nothing measured; once without a platform downlink estimate, as in Firefox or Safari,
   once with the link's true rate as ``navigator.connection.downlink``) against **later turns**.

3. **WER** (``wer``): each English corpus reply (``corpus.WER_REPLIES``) spoken offline by the container's engine
   with ``af_heart`` (``$KOKORO_RELAY_TEST_VOICES`` or ../shared/voices/kokoro-v1.0), encoded by the agent's own
   encoder (``voice_agent.opus_stream.OpusStream``, 24 kbit/s, 20 ms) and decoded as ``relay chat`` decodes
   (``relay_cli.opus_decode``); Whisper base (tests/asr_support.py) hears the PCM and the decoded Opus; the paired
   WER difference with a bootstrap interval (bench/wer_stats.py). Target: Opus - PCM <= +0.01. The same audio goes
   both ways, so the difference is the codec's alone.

Usage: ``python bench/bench_opus_link.py [link|js|wer|all] [--quick] [--replies N]``. ``--quick``: 2 replies per link
condition and 12 WER replies. ``js`` runs only when asked for (``all`` is link and wer).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import shutil
import statistics
import subprocess
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bench_intelligibility import load_asr_support
from benchlib import print_table, run_agent, run_server
from corpus import REPLIES, WER_REPLIES
from wer_stats import edits_per_text, paired_difference

from kokoro_server.silence import first_audible_sample, pcm16_to_float
from relay_cli.cli import quiet_agentcore_access_log
from relay_cli.gateway_client import TurnReport, run_turn
from relay_cli.opus_decode import decode_opus_turn
from relay_core import limits
from relay_core.audio_piece import AudioChoice
from relay_core.client.session import AudioEnded, AudioReceived, ClientEvent, OpusReceived, TextReceived, TurnOutcome
from relay_local.relay_stack import RelayStack

VOICE = "af_heart"
LINKS_KBIT: tuple[int | None, ...] = (None, 512, 256, 128)
"""None: the proxy without a rate limit (its delay only), the control."""
ONE_WAY_DELAY_S = 0.05
"""Each direction's delay: a round trip of 100 ms, a typical mobile network's."""
START_BUFFER_S = 0.2
JS_LINKS: tuple[tuple[int | None, AudioChoice], ...] = (
    (None, AudioChoice.OPUS),
    (384, AudioChoice.PCM),
    (256, AudioChoice.PCM),
    (24, AudioChoice.OPUS),
)
"""The ``js`` part's links: the open link, and links slower than real time for the format (PCM needs ~514 kbit/s,
Opus ~33)."""
JS_REPLAY = Path(__file__).with_name("js_sink_replay.mjs")
TARGET_WER_MARGIN = 0.01
ROOT = Path(__file__).resolve().parents[1]


def official_voice() -> Path:
    """The official af_heart pack: ``$KOKORO_RELAY_TEST_VOICES`` or ../shared/voices/kokoro-v1.0."""
    configured = os.environ.get("KOKORO_RELAY_TEST_VOICES")
    directory = Path(configured) if configured else (ROOT / "../shared/voices/kokoro-v1.0").resolve()
    path = directory / f"{VOICE}.pt"
    if not path.is_file():
        raise SystemExit(f"{path} is missing: set KOKORO_RELAY_TEST_VOICES to the official Kokoro v1.0 voices")
    return path


class LinkProxy:
    """A TCP proxy on 127.0.0.1 whose two directions are each a serial link of ``kbit_s`` (None: no limit) with a
    one-way delay: a byte leaves when the link has sent every byte before it, and arrives ``delay_s`` later."""

    def __init__(self, target_host: str, target_port: int, *, kbit_s: int | None, delay_s: float) -> None:
        self._target = (target_host, target_port)
        self._bytes_per_s = kbit_s * 1000 / 8 if kbit_s else None
        self._delay_s = delay_s
        self._server: asyncio.Server | None = None
        self.port = 0

    async def __aenter__(self) -> LinkProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 5)

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection(*self._target)
        await asyncio.gather(self._carry(client_r, server_w), self._carry(server_r, client_w))

    async def _carry(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One direction: read as the sender writes, deliver each piece when the link would."""
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()
        deliver = asyncio.create_task(self._deliver(queue, writer))
        link_free = 0.0
        try:
            while data := await reader.read(1400):
                now = time.perf_counter()
                sent = now if self._bytes_per_s is None else max(now, link_free) + len(data) / self._bytes_per_s
                link_free = sent
                queue.put_nowait((sent + self._delay_s, data))
        except ConnectionError:
            pass
        queue.put_nowait((0.0, b""))
        await deliver

    @staticmethod
    async def _deliver(queue: asyncio.Queue[tuple[float, bytes]], writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                at, data = await queue.get()
                if not data:
                    break
                await asyncio.sleep(max(0.0, at - time.perf_counter()))
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()


def through(gateway_url: str, port: int) -> str:
    """``gateway_url`` with its host and port replaced by the proxy's."""
    parts = urlsplit(gateway_url)
    return urlunsplit((parts.scheme, f"127.0.0.1:{port}", parts.path, parts.query, parts.fragment))


@dataclass
class Arrivals:
    """Each audio message's arrival (seconds after ``sendMessage``) and the turn's samples it ends at."""

    started: float = field(default_factory=time.perf_counter)
    times: list[float] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)

    def on_event(self, event: ClientEvent) -> None:
        if isinstance(event, AudioReceived):
            end = event.sample_offset + len(event.pcm) // limits.SAMPLE_WIDTH_BYTES
        elif isinstance(event, OpusReceived):
            end = event.sample_offset + event.samples
        else:
            return
        self.times.append(time.perf_counter() - self.started)
        self.ends.append(end)


@dataclass(frozen=True)
class Playback:
    """What :class:`FixedBufferPlayer` heard of one turn."""

    first_audible_s: float
    speech_s: float
    stalls: int
    stalled_s: float


def play(arrivals: Arrivals, pcm: bytes) -> Playback:
    """The fixed-buffer player on one turn: start once :data:`START_BUFFER_S` of audio is buffered (or the turn's
    audio is all there), play in real time; an underrun is a stall, and playback waits again for the buffer."""
    rate = limits.SAMPLE_RATE
    total = len(pcm) // limits.SAMPLE_WIDTH_BYTES
    first = first_audible_sample(pcm16_to_float(pcm), rate) or 0
    first_audible_s = next(t for t, end in zip(arrivals.times, arrivals.ends, strict=True) if end > first)
    need = round(START_BUFFER_S * rate)
    stalls, stalled_s = 0, 0.0
    played = 0  # samples played when playback (re)starts
    clock: float | None = None  # wall time at which sample ``played`` plays
    for index, (t, end) in enumerate(zip(arrivals.times, arrivals.ends, strict=True)):
        if clock is not None:
            at_arrival = played + (t - clock) * rate
            if at_arrival > arrivals.ends[index - 1]:  # ran dry before this message came
                dry = clock + (arrivals.ends[index - 1] - played) / rate
                stalls += 1
                stalled_s += t - dry
                played, clock = arrivals.ends[index - 1], None
        if clock is None and (end - played >= need or end >= total):
            clock = t
    return Playback(first_audible_s, total / rate, stalls, stalled_s)


async def link_turns(stack: RelayStack, replies: list[str]) -> dict[tuple[int | None, AudioChoice], list[Playback]]:
    """Every reply over every link both ways, interleaved (reply by reply) so that a slow spell of the shared
    machine falls on every condition alike; one unmeasured warm-up turn first."""
    token = stack.dev_token("bench-opus-link")
    gateway = urlsplit(stack.gateway_url)
    out: dict[tuple[int | None, AudioChoice], list[Playback]] = {}
    async with contextlib.AsyncExitStack() as proxies:
        ports = {
            kbit: (
                await proxies.enter_async_context(
                    LinkProxy(gateway.hostname or "127.0.0.1", gateway.port or 80, kbit_s=kbit, delay_s=ONE_WAY_DELAY_S)
                )
            ).port
            for kbit in LINKS_KBIT
        }
        await run_turn(stack.gateway_url, token, REPLIES[0], audio=AudioChoice.OPUS)
        for text in replies:
            for kbit, port in ports.items():
                for choice in AudioChoice:
                    arrivals = Arrivals()
                    report: TurnReport = await run_turn(
                        through(stack.gateway_url, port), token, text, audio=choice, on_event=arrivals.on_event
                    )
                    if report.outcome is not TurnOutcome.COMPLETED:
                        raise SystemExit(f"a {choice} turn ended {report.outcome}: {report.code} {report.message}")
                    arrivals.times = [t - report.connect_s for t in arrivals.times]  # from sendMessage
                    result = play(arrivals, report.pcm)
                    out.setdefault((kbit, choice), []).append(result)
                    print(
                        f"{kbit or 'unlimited'} kbit/s {choice.value}: first audible {result.first_audible_s:.2f} s, "
                        f"{result.stalls} stalls ({result.stalled_s:.1f} s) in {result.speech_s:.1f} s",
                        flush=True,
                    )
    return dict(sorted(out.items(), key=lambda item: (-(item[0][0] or 1 << 30), item[0][1] is not AudioChoice.PCM)))


@dataclass
class Schedule:
    """One turn's arrivals as the JS sink gets them (seconds after ``sendMessage``, once ``shift`` is applied)."""

    started: float = field(default_factory=time.perf_counter)
    events: list[dict[str, Any]] = field(default_factory=list)

    def on_event(self, event: ClientEvent) -> None:
        at = time.perf_counter() - self.started
        if isinstance(event, TextReceived):
            self.events.append({"t": at, "kind": "text", "chars": len(event.text)})
        elif isinstance(event, AudioReceived):
            samples = len(event.pcm) // limits.SAMPLE_WIDTH_BYTES
            self.events.append(
                {"t": at, "kind": "audio", "samples": samples, "wireBytes": base64_bytes(len(event.pcm)), "opus": False}
            )
        elif isinstance(event, OpusReceived):
            wire = base64_bytes(sum(len(packet) for packet in event.packets))
            self.events.append({"t": at, "kind": "audio", "samples": event.samples, "wireBytes": wire, "opus": True})
        elif isinstance(event, AudioEnded):
            self.events.append({"t": at, "kind": "end"})

    def shift(self, seconds: float) -> dict[str, Any]:
        """The turn for the replay, its times from ``sendMessage`` (``seconds``: the connect before it)."""
        return {"events": [{**e, "t": float(e["t"]) - seconds} for e in self.events]}


def base64_bytes(raw: int) -> int:
    """Bytes that ``raw`` bytes take in base64 (an audio_chunk's ``data``)."""
    return 4 * math.ceil(raw / 3)


async def js_sessions(stack: RelayStack, sessions: int, turns: int) -> list[dict[str, Any]]:
    """``sessions`` sessions of ``turns`` corpus replies over each of JS_LINKS, each turn's arrivals recorded."""
    token = stack.dev_token("bench-opus-link-js")
    gateway = urlsplit(stack.gateway_url)
    out: list[dict[str, Any]] = []
    await run_turn(stack.gateway_url, token, REPLIES[0], audio=AudioChoice.OPUS)  # warm-up
    for kbit, choice in JS_LINKS:
        async with LinkProxy(
            gateway.hostname or "127.0.0.1", gateway.port or 80, kbit_s=kbit, delay_s=ONE_WAY_DELAY_S
        ) as proxy:
            for session in range(sessions):
                recorded: list[dict[str, Any]] = []
                for index in range(turns):
                    text = REPLIES[1 + (session * turns + index) % (len(REPLIES) - 1)]
                    schedule = Schedule()
                    report = await run_turn(
                        through(stack.gateway_url, proxy.port), token, text, audio=choice, on_event=schedule.on_event
                    )
                    if report.outcome is not TurnOutcome.COMPLETED:
                        raise SystemExit(f"a {choice} turn ended {report.outcome}: {report.code} {report.message}")
                    recorded.append(schedule.shift(report.connect_s))
                    print(
                        f"{kbit or 'unlimited'} kbit/s {choice.value} session {session} turn {index}: recorded",
                        flush=True,
                    )
                out.append({"kbit": kbit, "audio": choice.value, "turns": recorded})
    return out


def replay(recorded: list[dict[str, Any]], *, downlink: bool) -> list[dict[str, Any]]:
    """Every recorded session through the JS sink (node): ``downlink``: the platform reports the link's rate."""
    node = shutil.which("node")
    if node is None:
        raise SystemExit("the js part needs node (make web-test installs it)")
    sessions = [
        {
            "name": f"{s['kbit']}:{s['audio']}",
            "downlinkBps": None if not downlink or s["kbit"] is None else int(s["kbit"]) * 1000,
            "turns": s["turns"],
        }
        for s in recorded
    ]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump({"sessions": sessions}, handle)
    try:
        done = subprocess.run(
            [node, str(JS_REPLAY), handle.name], capture_output=True, text=True, check=True, timeout=300
        )
    finally:
        os.unlink(handle.name)
    result: list[dict[str, Any]] = json.loads(done.stdout)
    return result


def js(sessions: int, turns: int, record: Path | None, replay_only: bool) -> None:
    """Record (unless ``replay_only``: read ``record``), save to ``record`` if given, replay, print the table."""
    if replay_only and record is not None:
        recorded = json.loads(record.read_text())
    else:
        env = {"KOKORO_VOICES_PATH": str(official_voice()), "KOKORO_DEFAULT_VOICE": VOICE}
        quiet_agentcore_access_log()
        with contextlib.ExitStack() as servers:
            tts = servers.enter_context(run_server(env=env))
            agent_url = servers.enter_context(run_agent(tts.ws_url)).http_url
            stack = servers.enter_context(RelayStack(agent_url=agent_url, function_env={"TURNS_PER_MINUTE": "1000"}))
            recorded = asyncio.run(js_sessions(stack, sessions, turns))
        if record is not None:
            record.write_text(json.dumps(recorded))
    plain, known = replay(recorded, downlink=False), replay(recorded, downlink=True)
    rows: list[list[object]] = []
    for name in dict.fromkeys(str(s["name"]) for s in plain):
        kbit, audio = name.split(":")

        def turns_of(results: list[dict[str, Any]], first: bool, name: str = name) -> list[dict[str, Any]]:
            return [t for s in results if s["name"] == name for i, t in enumerate(s["turns"]) if (i == 0) == first]

        def per_min(ts: list[dict[str, Any]], key: str) -> str:
            minutes = sum(t["speechS"] for t in ts) / 60
            return f"{sum(t[key] for t in ts) / minutes:.1f}"

        def wait(ts: list[dict[str, Any]]) -> str:
            return f"{statistics.median(t['startupS'] or 0.0 for t in ts):.2f}"

        first, first_known, later = turns_of(plain, True), turns_of(known, True), turns_of(plain, False)
        rows.append(
            [
                "unlimited" if kbit == "None" else kbit,
                audio,
                f"{len(first)}/{len(later)}",
                per_min(first, "stalls"),
                per_min(first, "stalledS"),
                wait(first),
                per_min(first_known, "stalls"),
                wait(first_known),
                per_min(later, "stalls"),
                per_min(later, "stalledS"),
                wait(later),
            ]
        )
    print_table(
        f"The JS sink on recorded arrivals, {ONE_WAY_DELAY_S * 2000:.0f} ms round trip: first turns (no downlink "
        "estimate / the link's rate as navigator.connection.downlink) vs later turns",
        [
            "link kbit/s",
            "audio",
            "turns first/later",
            "first stalls/min",
            "first stalled s/min",
            "first wait s (median)",
            "first+downlink stalls/min",
            "first+downlink wait s",
            "later stalls/min",
            "later stalled s/min",
            "later wait s (median)",
        ],
        rows,
    )
    print(json.dumps({"plain": plain, "downlink": known}))


def link(replies: int) -> None:
    env = {"KOKORO_VOICES_PATH": str(official_voice()), "KOKORO_DEFAULT_VOICE": VOICE}
    quiet_agentcore_access_log()
    with contextlib.ExitStack() as servers:
        tts = servers.enter_context(run_server(env=env))
        agent_url = servers.enter_context(run_agent(tts.ws_url)).http_url
        stack = servers.enter_context(RelayStack(agent_url=agent_url, function_env={"TURNS_PER_MINUTE": "1000"}))
        results = asyncio.run(link_turns(stack, list(REPLIES[1 : 1 + replies])))
    rows: list[list[object]] = []
    for (kbit, choice), plays in results.items():
        minutes = sum(p.speech_s for p in plays) / 60
        rows.append(
            [
                "unlimited" if kbit is None else kbit,
                choice.value,
                len(plays),
                f"{sum(p.speech_s for p in plays):.1f}",
                f"{statistics.median(p.first_audible_s for p in plays) * 1000:.0f}",
                f"{sum(p.stalls for p in plays) / minutes:.1f}",
                f"{sum(p.stalled_s for p in plays) / minutes:.1f}",
            ]
        )
    print_table(
        f"Through a link of the given rate, {ONE_WAY_DELAY_S * 2000:.0f} ms round trip; fixed "
        f"{START_BUFFER_S * 1000:.0f} ms start-up buffer",
        ["link kbit/s", "audio", "turns", "speech s", "first audible ms (median)", "stalls/min", "stalled s/min"],
        rows,
    )


def wer(replies: int | None) -> None:
    from kokoro_server.engines import EngineConfig, load_engine  # noqa: PLC0415
    from kokoro_server.scheduled_speech import speak_offline  # noqa: PLC0415
    from relay_core.speech_options import SpeechOptions  # noqa: PLC0415
    from voice_agent.opus_stream import OpusStream  # noqa: PLC0415

    asr = load_asr_support()
    engine = load_engine(EngineConfig(voices_path=official_voice(), threads=2))
    whisper = asr.load_whisper()
    texts = list(WER_REPLIES)[:replies]
    heard_pcm: list[str] = []
    heard_opus: list[str] = []
    started = time.perf_counter()
    for index, text in enumerate(texts):
        pcm = speak_offline(engine, text, options=SpeechOptions(VOICE))
        stream = OpusStream()
        packets = stream.encode(pcm) + stream.flush()
        decoded = decode_opus_turn(packets, pre_skip=stream.pre_skip, total_samples=len(pcm) // 2)
        heard_pcm.append(asr.transcribe(whisper, pcm, engine.sample_rate))
        heard_opus.append(asr.transcribe(whisper, decoded, engine.sample_rate))
        if heard_pcm[-1] != heard_opus[-1]:
            print(f"reply {index}: pcm {heard_pcm[-1]!r} | opus {heard_opus[-1]!r}", flush=True)
    words = [len(asr.normalise(text)) for text in texts]
    edits_pcm = edits_per_text(texts, heard_pcm, asr.word_error_rate, words)
    edits_opus = edits_per_text(texts, heard_opus, asr.word_error_rate, words)
    result = paired_difference(words, edits_pcm, edits_opus)
    print_table(
        f"Whisper base on {len(texts)} English corpus replies ({sum(words)} words), {VOICE}: PCM vs Opus "
        f"{limits.OPUS_BITRATE // 1000} kbit/s",
        ["WER PCM", "WER Opus", "Opus - PCM", "95 % interval"],
        [result.row()],
    )
    met = "met" if result.difference <= TARGET_WER_MARGIN else "MISSED"
    print(f"target Opus - PCM <= +{TARGET_WER_MARGIN}: {met} ({time.perf_counter() - started:.0f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("part", nargs="?", choices=["link", "js", "wer", "all"], default="all")
    parser.add_argument("--quick", action="store_true", help="2 replies per link condition, 12 WER replies")
    parser.add_argument("--replies", type=int, default=None, help="replies per link condition (default 4)")
    parser.add_argument("--wer-replies", type=int, default=None, help="WER replies (default: all 83)")
    parser.add_argument("--sessions", type=int, default=2, help="js: sessions per link (default 2)")
    parser.add_argument("--turns", type=int, default=3, help="js: turns per session (default 3)")
    parser.add_argument("--record", type=Path, default=None, help="js: save the recorded arrivals here")
    parser.add_argument(
        "--replay", action="store_true", help="js: replay the arrivals saved in --record, record nothing"
    )
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    if args.part in ("wer", "all"):
        wer(args.wer_replies or (12 if args.quick else None))
    if args.part in ("link", "all"):
        link(args.replies or (2 if args.quick else 4))
    if args.part == "js":
        js(args.sessions, args.turns, args.record, args.replay)


if __name__ == "__main__":
    main()
