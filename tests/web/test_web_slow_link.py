"""The web client over a link slower than real time (Debian's Chromium, Playwright, the whole local relay, Opus).

Between the page and the stack's gateway sits a throttling WebSocket proxy on 127.0.0.1 (asyncio, ``websockets``):
what the page sends passes at once; what the gateway sends is queued as it comes and handed on in order, each
``audio_chunk`` only after its audio's duration divided by ``LINK_RATE`` has passed since the previous delivery
(a link that carries 0.6 s of speech per second, whatever the encoding). So that the link, not the speed of
synthesis on this shared machine, sets the pace, a reply's audio is held from its first chunk until the gateway
has sent the audio's end (a server faster than its link), then delivered at that rate. The page learns the
proxy's address from its ``/config.json``, rewritten by Playwright. With Opus, the library's WebAudioSink must
choose a start-up buffer from the arrivals it measured (the turn before: the first sound never waits for a
measurement) so that, once started, the reply plays through without a stall, and the page must say "poor
connection" (the turn's ``data-link="poor"``) rather than chop words. A first turn, with nothing measured, starts at
once and stalls at most once (the sink rebuffers by the rate it measured); told by the platform that the link is
slow (``navigator.connection.downlink``, set through DevTools' network emulation), it buffers from its first chunk
and does not stall. The direct route to the agent (no gateway) asks for Opus too and plays through the same sink.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import TYPE_CHECKING, Any

import pytest
from tests.web.test_web_browser import CHROMIUM, SHORT_PROMPT, TURN_TIMEOUT_MS, send, wait_for_end
from websockets.asyncio.client import connect
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from relay_core import limits
from relay_core.agent.events import AudioChunk, AudioStreamEnd
from relay_core.audio import b64decode
from relay_core.client.turn_messages import TurnMessage, parse_server_message

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Route

    from relay_local.relay_stack import RelayStack

LINK_RATE = 0.6
"""Audio seconds the throttled link delivers per wall second."""
FAST_LINK_RATE = 20.0
"""A link far faster than real time (the same proxy, so the two tests differ in the rate alone)."""

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed: run `make browser`"),
    pytest.mark.timeout(900),
]


def audio_seconds(frame: str | bytes) -> float:
    """Seconds of speech a gateway frame carries (0 for anything but an audio_chunk)."""
    message = parse_server_message(frame)
    if not isinstance(message, TurnMessage) or not isinstance(message.event, AudioChunk):
        return 0.0
    chunk = message.event
    samples = chunk.samples if chunk.samples is not None else len(b64decode(chunk.data)) // 2
    return samples / limits.SAMPLE_RATE


def ends_audio(frame: str | bytes) -> bool:
    """Whether a gateway frame ends a reply's audio (audio_stream_end, or the turn's terminal message)."""
    message = parse_server_message(frame)
    return isinstance(message, TurnMessage) and (isinstance(message.event, AudioStreamEnd) or message.terminal)


class ThrottledLink:
    """A WebSocket proxy from ``ws://127.0.0.1:<port>/...`` to ``upstream`` + the same path, on its own thread and
    loop, delivering the gateway's audio at ``rate`` times real time. ``errors`` holds what went wrong in it."""

    def __init__(self, upstream: str, rate: float) -> None:
        self.upstream = upstream.rstrip("/")
        self.rate = rate
        self.errors: list[str] = []
        self.delivered_audio_s = 0.0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: Server | None = None
        self.port = 0

    def __enter__(self) -> ThrottledLink:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(self._serve(), self._loop).result(timeout=30)
        return self

    def __exit__(self, *exc: object) -> None:
        server = self._server
        if server is not None:
            server.close()
            asyncio.run_coroutine_threadsafe(server.wait_closed(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)

    async def _serve(self) -> Server:
        server = await serve(self._handle, "127.0.0.1", 0, max_size=None)
        self.port = next(iter(server.sockets)).getsockname()[1]
        return server

    async def _handle(self, page: ServerConnection) -> None:
        path = page.request.path if page.request is not None else "/"
        try:
            async with connect(self.upstream + path, max_size=None) as gateway:
                queue: asyncio.Queue[str | bytes | None] = asyncio.Queue()
                tasks = [
                    asyncio.create_task(self._read(gateway, queue)),
                    asyncio.create_task(self._deliver(queue, page)),
                    asyncio.create_task(self._forward(page, gateway)),
                ]
                await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
                for task in tasks:
                    task.cancel()
        except (OSError, ConnectionClosed) as exc:
            self.errors.append(f"proxy connection: {exc!r}")

    async def _read(self, gateway: Any, queue: asyncio.Queue[str | bytes | None]) -> None:
        """Queue the gateway's frames as they come (the link's buffer: the gateway is never held up)."""
        try:
            async for frame in gateway:
                queue.put_nowait(frame)
        except ConnectionClosed:
            pass
        queue.put_nowait(None)

    async def _deliver(self, queue: asyncio.Queue[str | bytes | None], page: ServerConnection) -> None:
        """Hand the frames on in order, each audio chunk after its transfer time at the link's rate."""
        loop = asyncio.get_running_loop()
        free_at = loop.time()
        while (frame := await queue.get()) is not None:
            batch = [frame]
            if audio_seconds(frame) > 0:  # hold the reply's audio until the gateway has sent all of it
                while not ends_audio(batch[-1]) and (more := await queue.get()) is not None:
                    batch.append(more)
            for held in batch:
                seconds = audio_seconds(held)
                if seconds > 0:
                    free_at = max(free_at, loop.time()) + seconds / self.rate
                    await asyncio.sleep(free_at - loop.time())
                    self.delivered_audio_s += seconds
                await page.send(held)

    async def _forward(self, page: ServerConnection, gateway: Any) -> None:
        """What the page sends goes to the gateway at once."""
        async for frame in page:
            await gateway.send(frame)


@pytest.fixture(scope="module")
def stack(relay_stack: RelayStack) -> RelayStack:
    """The session's whole relay on loopback (conftest ``relay_stack``)."""
    return relay_stack


EMULATED_DOWNLINK_BPS = 400_000
"""What DevTools' network emulation tells the page its downlink is (``navigator.connection.downlink`` 0.4): below
PCM's ~0.68 Mbit/s of base64 per second of speech, so a first PCM turn knows its link is slow before it measures."""

RECORD_SINK_JS = """() => {
  const label = () => document.querySelector("#turn-status").textContent;
  window.sinkEvents = { link: [], stall: [] };
  window.relayPlayer.on("link", (e) => window.sinkEvents.link.push({ ...e, label: label() }));
  window.relayPlayer.on("stall", (e) => window.sinkEvents.stall.push({ ...e, label: label() }));
}"""
"""Records the sink's events, each with what the turn's status said right after the page handled it."""

PLAYED_JS = """() => ({
  events: window.sinkEvents,
  stalls: window.relayPlayer.stalls,
  rebuffers: window.relayPlayer.rebuffers,
  downlink: navigator.connection?.downlink ?? null,
  underruns: window.relayPlayer.underruns,
  seconds: window.relayPlayer.sampleCount / window.relayPlayer.sampleRate,
  link: document.querySelector("#turn-status").closest("[data-link]")?.dataset.link ?? null,
})"""


def play_through_link(
    stack: RelayStack,
    browser: Browser,
    rate: float,
    *,
    turns: int = 1,
    audio: str = "opus",
    downlink_bps: int | None = None,
) -> dict[str, Any]:
    """``turns`` turns of SHORT_PROMPT one after another (``audio``: what the page asks for), the page talking to the
    gateway through a ThrottledLink at ``rate``; what the sink did in the last one (PLAYED_JS), once its reply has
    played out. (The first sound never waits for a measurement: a turn buffers for the link that the turns before it
    measured, or that the platform reports: ``downlink_bps`` emulated through DevTools before the first turn.)"""
    with ThrottledLink(stack.gateway_url.rsplit("/", 1)[0], rate) as link:
        proxied = stack.gateway_url.replace(stack.gateway_url.rsplit("/", 1)[0], f"ws://127.0.0.1:{link.port}")

        def through_proxy(route: Route) -> None:
            config = route.fetch().json()
            route.fulfill(json={**config, "gateway_url": proxied})

        context = browser.new_context(viewport={"width": 1100, "height": 900})
        page = context.new_page()
        console: list[str] = []
        page.on("console", lambda msg: console.append(f"{msg.type}: {msg.text}"))
        page.on("pageerror", lambda err: console.append(f"pageerror: {err}"))
        page.route("**/config.json", through_proxy)
        try:
            page.goto(stack.web_url.rstrip("/") + "/" + ("?audio=pcm" if audio == "pcm" else ""))
            page.wait_for_function("() => window.relayApp !== undefined")
            page.evaluate("() => window.relayApp.ready")
            page.wait_for_selector('#connection[data-state="open"]', timeout=30_000)
            page.wait_for_selector(f'#audio-format[data-format="{audio}"]', timeout=30_000)
            if downlink_bps is not None:
                cdp = context.new_cdp_session(page)
                cdp.send("Network.enable")
                throughput = downlink_bps / 8
                conditions = {"latency": 0, "downloadThroughput": throughput, "uploadThroughput": throughput}
                cdp.send("Network.emulateNetworkConditions", {"offline": False, **conditions})
            page.evaluate(RECORD_SINK_JS)
            for _ in range(turns):
                page.evaluate("() => { window.sinkEvents = { link: [], stall: [] }; }")  # this turn's events
                send(page, SHORT_PROMPT)
                assert wait_for_end(page) == "completed"
                page.wait_for_function("() => !window.relayPlayer.playing", timeout=TURN_TIMEOUT_MS)
            result: dict[str, Any] = page.evaluate(PLAYED_JS)
        finally:
            context.close()
    assert not link.errors, link.errors
    assert not [line for line in console if line.startswith("pageerror")], console
    assert link.delivered_audio_s > 1.0, "the reply's speech went through the throttled link"
    print(rate, json.dumps(result["events"]), result["seconds"])  # the measured rate and start-up wait (report)
    return result


def test_opus_over_a_link_at_0_6x_plays_without_a_stall_and_says_poor_connection(
    stack: RelayStack, browser: Browser
) -> None:
    result = play_through_link(stack, browser, LINK_RATE, turns=2)
    (started,) = result["events"]["link"]
    assert started["slow"] is True and started["rate"] < 1, started
    assert started["label"] == "poor connection"
    assert result["events"]["stall"] == []
    assert result["stalls"] == 0
    assert result["underruns"] == 0
    assert result["link"] == "poor", "the turn stays marked poor connection"


def test_opus_over_a_fast_link_starts_without_waiting_and_says_nothing_of_the_connection(
    stack: RelayStack, browser: Browser
) -> None:
    result = play_through_link(stack, browser, FAST_LINK_RATE)
    (started,) = result["events"]["link"]
    assert started["slow"] is False and started["startupS"] < 0.05, started  # the first chunk played at once
    assert started["label"] != "poor connection"
    assert started["bufferedS"] < result["seconds"], "playback started before the whole reply was there"
    assert result["stalls"] == 0
    assert result["link"] is None


def test_a_first_turn_at_0_6x_starts_at_once_and_stalls_at_most_once(stack: RelayStack, browser: Browser) -> None:
    result = play_through_link(stack, browser, LINK_RATE)
    (started,) = result["events"]["link"]
    assert started["startupS"] < 0.05, started  # nothing measured yet: the first chunk played at once
    assert result["stalls"] <= 1, result
    assert result["underruns"] == result["stalls"] == result["rebuffers"], "after the one rebuffer, no underrun"
    assert len(result["events"]["stall"]) == result["stalls"]
    if result["stalls"]:
        assert result["link"] == "poor", "a stall says poor connection"


def test_a_first_pcm_turn_told_its_downlink_is_slow_buffers_from_its_first_chunk_and_never_stalls(
    stack: RelayStack, browser: Browser
) -> None:
    result = play_through_link(stack, browser, LINK_RATE, audio="pcm", downlink_bps=EMULATED_DOWNLINK_BPS)
    # Chromium reports the emulated downlink times a random 0.9-1.1 (per browser process), rounded to 25 kbit/s
    emulated_mbps = EMULATED_DOWNLINK_BPS / 1e6
    assert abs(result["downlink"] - emulated_mbps) <= 0.1 * emulated_mbps + 0.0125, result["downlink"]
    (started,) = result["events"]["link"]
    assert started["slow"] is True and started["startupS"] > 0, started
    assert started["label"] == "poor connection"
    assert result["events"]["stall"] == []
    assert result["stalls"] == result["underruns"] == result["rebuffers"] == 0


DIRECT_JS = """async () => {
  await window.relayDirect.audioReady;
  const label = () => document.querySelector("#turn-status").textContent;
  window.sinkEvents = { link: [], stall: [] };
  window.relayPlayer.on("link", (e) => window.sinkEvents.link.push({ ...e, label: label() }));
  window.relayPlayer.on("stall", (e) => window.sinkEvents.stall.push({ ...e, label: label() }));
  return window.relayDirect.audioChoice;
}"""


def test_the_direct_route_asks_the_agent_for_opus_and_plays_it_through_the_sink(
    stack: RelayStack, browser: Browser
) -> None:
    """The route that talks to the agent without the gateway negotiates Opus as the gateway route does (the browser
    decodes it: the agent payload says ``"audio": "opus"``, the page says Opus) and plays through the same sink: its
    start-up buffer's ``link`` event, every sample of the reply scheduled gaplessly."""
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    console: list[str] = []
    page.on("pageerror", lambda err: console.append(f"pageerror: {err}"))
    page.on("console", lambda msg: console.append(msg.text) if "relay (direct)" in msg.text else None)
    try:
        page.goto(stack.web_url.rstrip("/") + "/")
        page.wait_for_function("() => window.relayApp !== undefined")
        page.evaluate("() => window.relayApp.ready")
        choice = page.evaluate(DIRECT_JS)
        assert choice["format"] == "opus", choice
        with page.expect_request(lambda r: r.url.endswith("/agent/invocations"), timeout=TURN_TIMEOUT_MS) as request:
            send(page, SHORT_PROMPT, route="direct")
        payload = request.value.post_data_json
        assert isinstance(payload, dict) and payload.get("audio") == "opus", payload
        assert wait_for_end(page) == "completed"
        page.wait_for_selector('#audio-format[data-format="opus"]')
        page.wait_for_function("() => !window.relayPlayer.playing", timeout=TURN_TIMEOUT_MS)
        result: dict[str, Any] = page.evaluate(PLAYED_JS)
        gaps = page.evaluate("() => window.relayPlayer.scheduleGaps()")
        heard = page.evaluate("() => window.relayApp.metrics().samples")
        print("direct", json.dumps(result["events"]), result["seconds"])  # the start-up (report)
    finally:
        context.close()
    assert not console, console  # no page error, no event of the agent's the direct route could not map
    (started,) = result["events"]["link"]  # the sink's start-up buffer ran (the old direct route bypassed it)
    assert started["slow"] is False, started
    assert result["seconds"] > 1.0
    assert heard == round(result["seconds"] * 24_000), "every decoded sample was scheduled"
    assert gaps == []
