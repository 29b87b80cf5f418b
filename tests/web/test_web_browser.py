"""The web client end to end in Debian's Chromium, driven by Playwright, against the whole local relay
(:class:`relay_local.relay_stack.RelayStack`: the real gateway functions, the real agent with the offline
``speak`` model, the real Kokoro-82M TTS).

What the server sent is taken from the wire, not from the page: every WebSocket frame the browser received is
captured by Playwright and decoded with relay_core's own ``ClientSession`` (and, in local mode, the SSE body
with relay_core's ``SseDecoder``). The page's player exposes what it handed to Web Audio
(``window.relayPlayer``): the samples, read back from the AudioBuffers, and each buffer's start time.
A screenshot of each finished page is kept under ``test-output/web/``.
"""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from relay_cli.opus_decode import decode_opus_turn
from relay_core import limits
from relay_core.agent.events import AgentStart, AudioChunk, TextDelta, parse_event
from relay_core.audio import b64decode
from relay_core.client.session import ClientSession, TurnOutcome
from relay_core.languages import LANGUAGES
from relay_core.sse import SseDecoder

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, Request, WebSocket

    from relay_local.relay_stack import RelayStack

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--autoplay-policy=no-user-gesture-required",
]
OUTPUT_DIR = Path(__file__).resolve().parents[2] / "test-output" / "web"
TURN_TIMEOUT_MS = 400_000
"""A turn's deadline. Generous: on 2 shared cores under load a 7-second reply has taken over a minute."""
SHORT_PROMPT = "Hello from the browser. This is Kokoro Relay."
LONG_PROMPT = "First, a sentence to start with. Then a second one follows it. And a third one ends the reply."
TERMINAL = ("completed", "cancelled", "failed", "rejected", "expired")

pytestmark = [
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="Debian chromium is not installed: run `make browser` (apt-get install chromium)"
    ),
    pytest.mark.timeout(900),
]


@pytest.fixture(scope="module")
def stack(relay_stack: RelayStack) -> RelayStack:
    """The session's whole relay on loopback (conftest ``relay_stack``): one stack per process, since the
    stack's moto backend and the functions' environment are process-wide."""
    return relay_stack


@dataclass
class Wire:
    """Every WebSocket frame the page sent and received, in order (Playwright's view of the network)."""

    received: list[str] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)
    sockets: int = 0

    def attach(self, ws: WebSocket) -> None:
        self.sockets += 1
        ws.on("framereceived", lambda payload: self.received.append(_text(payload)))
        ws.on("framesent", lambda payload: self.sent.append(_text(payload)))

    def sent_actions(self) -> list[dict[str, Any]]:
        return [json.loads(m) for m in self.sent]


def _text(payload: str | bytes) -> str:
    return payload if isinstance(payload, str) else payload.decode("utf-8")


@dataclass
class ClientPage:
    page: Page
    wire: Wire
    console: list[str]


@contextmanager
def _open_page(stack: RelayStack, browser: Browser, query: str) -> Iterator[ClientPage]:
    """The page, loaded from the stack's web origin with ``query``, signed in with the dev token and connected."""
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    wire = Wire()
    console: list[str] = []
    page.on("websocket", wire.attach)
    page.on("console", lambda msg: console.append(f"{msg.type}: {msg.text}"))
    page.on("pageerror", lambda err: console.append(f"pageerror: {err}"))
    page.on("response", lambda r: console.append(f"error: HTTP {r.status} {r.url}") if r.status >= 400 else None)
    try:
        page.goto(stack.web_url.rstrip("/") + "/" + query)
        page.wait_for_function("() => window.relayApp !== undefined")
        page.evaluate("() => window.relayApp.ready")
        page.wait_for_selector('#connection[data-state="open"]', timeout=30_000)
        yield ClientPage(page, wire, console)
    finally:
        context.close()
    assert not [line for line in console if line.startswith(("pageerror", "error"))], console


@pytest.fixture
def client_page(stack: RelayStack, browser: Browser) -> Iterator[ClientPage]:
    """The page asking for PCM: these tests compare what it played with the PCM on the wire, sample for sample."""
    with _open_page(stack, browser, "?audio=pcm") as client:
        yield client


@pytest.fixture
def opus_page(stack: RelayStack, browser: Browser) -> Iterator[ClientPage]:
    """The page as users get it: Opus, decoded by WebCodecs."""
    with _open_page(stack, browser, "") as client:
        yield client


def open_options(page: Page) -> None:
    """Unfold the options under the composer (route, synthesis, voice, captions)."""
    if not page.evaluate("() => document.getElementById('options').open"):
        page.click("#options summary")


def send(page: Page, prompt: str, *, route: str = "gateway") -> None:
    open_options(page)
    page.check(f'input[name="route"][value="{route}"]')
    page.fill("#prompt", prompt)
    page.click("#send")


def wait_for_end(page: Page) -> str:
    page.wait_for_function(
        f"() => {json.dumps(list(TERMINAL))}.includes(document.querySelector('#turn-status').dataset.status)",
        timeout=TURN_TIMEOUT_MS,
    )
    return str(page.get_attribute("#turn-status", "data-status"))


def wait_for_audio(page: Page, samples: int = 1) -> None:
    page.wait_for_function(f"() => window.relayPlayer.sampleCount >= {samples}", timeout=TURN_TIMEOUT_MS)


SCHEDULED_PCM_JS = """() => {
  const s = window.relayPlayer.scheduledSamples();
  const bytes = new Uint8Array(s.buffer, s.byteOffset, s.byteLength);
  let out = "";
  for (let i = 0; i < bytes.length; i += 0x8000) out += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(out);
}"""


def scheduled_pcm(page: Page) -> bytes:
    """The s16le samples the page handed to Web Audio, read back from its AudioBuffers."""
    return base64.b64decode(page.evaluate(SCHEDULED_PCM_JS))


def schedule(page: Page) -> dict[str, Any]:
    result: dict[str, Any] = page.evaluate(
        """() => ({
          buffers: window.relayPlayer.scheduled,
          gaps: window.relayPlayer.scheduleGaps(),
          underruns: window.relayPlayer.underruns,
          sampleRate: window.relayPlayer.sampleRate,
          active: window.relayPlayer.activeSources,
          playing: window.relayPlayer.playing,
        })"""
    )
    return result


def decode_wire(received: list[str]) -> ClientSession:
    """relay_core's reading of everything the gateway sent the page (replays after a resume included)."""
    session = ClientSession(collect_audio=True)
    for message in received:
        session.receive(message)
    return session


def the_turn(session: ClientSession) -> Any:
    turns = session.turns
    assert len(turns) == 1, [t.turn_id for t in turns]
    return turns[0]


def assert_gapless(plan: dict[str, Any]) -> None:
    """Each buffer starts exactly where the previous one ended, except after a counted underrun, which only
    happens when playback had run dry (the page then starts the next buffer a short lead after "now")."""
    assert plan["gaps"] == [], plan["gaps"]
    buffers = plan["buffers"]
    assert buffers, "nothing was scheduled"
    offset = 0
    for buffer in buffers:
        assert buffer["offset"] == offset
        offset += buffer["frames"]
    assert sum(1 for b in buffers if b["afterUnderrun"]) == plan["underruns"]
    rate = plan["sampleRate"]
    for prev, cur in itertools.pairwise(buffers):
        if cur["afterUnderrun"]:  # playback really had run dry when this buffer came
            assert cur["at"] > prev["start"] + prev["frames"] / rate


def screenshot(page: Page, name: str) -> None:
    OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(OUTPUT_DIR / name), full_page=True)


def test_turn_schedules_exactly_the_samples_the_gateway_sent(client_page: ClientPage) -> None:
    page, wire = client_page.page, client_page.wire
    send(page, SHORT_PROMPT)
    assert wait_for_end(page) == "completed"

    turn = the_turn(decode_wire(wire.received))
    assert turn.outcome is TurnOutcome.COMPLETED
    assert len(turn.pcm) > 24_000 * 2, "expected at least a second of speech"
    assert scheduled_pcm(page) == turn.pcm
    assert_gapless(schedule(page))
    assert page.inner_text("#reply") == turn.text
    assert page.locator("#reply .word").count() == len(turn.text.split())
    for metric in ("#ttfb", "#ttfa"):
        assert page.inner_text(metric).endswith(" ms"), metric
    assert float(page.inner_text("#ttfa").removesuffix(" ms")) >= float(page.inner_text("#ttfb").removesuffix(" ms"))
    assert "local.echo" in page.locator(".model").last.inner_text(), "the page says which model answered"
    sent = wire.sent_actions()
    assert [m["action"] for m in sent] == ["sendMessage"]
    assert sent[0]["turn_id"] == turn.turn_id
    screenshot(page, "web-client-turn.png")


OPUS_MIN_SNR_DB = 30.0
"""Chromium's Opus decode (WebCodecs, 48 kHz decimated by the library) against libopus's at 24 kHz: near-identical."""


def test_the_page_plays_opus_decoded_by_webcodecs_on_the_pcm_timeline(opus_page: ClientPage) -> None:
    page, wire = opus_page.page, opus_page.wire
    page.wait_for_selector('#audio-format[data-format="opus"]', timeout=30_000)
    send(page, SHORT_PROMPT)
    assert wait_for_end(page) == "completed"
    assert page.inner_text("#audio-format") == "Opus"
    assert [m.get("audio") for m in wire.sent_actions()] == ["opus"]

    turn = the_turn(decode_wire(wire.received))
    messages = [json.loads(m) for m in wire.received]
    (start,) = [m for m in messages if m.get("type") == "audio_stream_start"]
    (end,) = [m for m in messages if m.get("type") == "audio_stream_end"]
    assert start["format"] == "opus"
    total = int(end["total_samples"])
    assert total > 24_000, "expected at least a second of speech"
    expected = decode_opus_turn(list(turn.packets), pre_skip=int(start["pre_skip"]), total_samples=total)
    got = scheduled_pcm(page)
    assert len(got) == len(expected) == total * 2, "exactly the PCM timeline"
    want = np.frombuffer(expected, dtype="<i2").astype(np.float64)
    have = np.frombuffer(got, dtype="<i2").astype(np.float64)
    snr = 10 * np.log10(float((want**2).sum()) / max(float(((want - have) ** 2).sum()), 1e-9))
    assert snr >= OPUS_MIN_SNR_DB, snr
    assert_gapless(schedule(page))
    assert page.inner_text("#reply") == turn.text
    screenshot(page, "web-client-opus-turn.png")


def test_stop_sends_cancel_and_silences_playback(client_page: ClientPage) -> None:
    page, wire = client_page.page, client_page.wire
    send(page, LONG_PROMPT)
    page.wait_for_function("() => window.relayPlayer.playedSeconds() > 0", timeout=TURN_TIMEOUT_MS)
    heard_before_s = float(page.evaluate("() => window.relayPlayer.playedSeconds()"))
    page.click("#stop")
    buffers_at_stop = len(schedule(page)["buffers"])
    scheduled_at_stop = int(page.evaluate("() => window.relayPlayer.sampleCount"))
    status = wait_for_end(page)

    assert status == "cancelled"
    actions = wire.sent_actions()
    assert [m["action"] for m in actions] == ["sendMessage", "cancel"]
    assert actions[1]["turn_id"] == actions[0]["turn_id"]
    played_ms = actions[1]["played_ms"]  # what the listener heard: the agent keeps only those words
    assert heard_before_s * 1000 <= played_ms <= scheduled_at_stop * 1000 / limits.SAMPLE_RATE, played_ms
    plan = schedule(page)
    assert len(plan["buffers"]) == buffers_at_stop, "audio was scheduled after Stop"
    assert plan["active"] == 0 and not plan["playing"]
    turn = the_turn(decode_wire(wire.received))
    assert turn.outcome is TurnOutcome.CANCELLED
    assert page.inner_text("#turn-status") == "cancelled"
    assert page.is_enabled("#send") and page.is_disabled("#stop")
    screenshot(page, "web-client-cancelled.png")


def test_dropped_connection_resumes_with_no_gap(client_page: ClientPage) -> None:
    page, wire = client_page.page, client_page.wire
    send(page, LONG_PROMPT)
    wait_for_audio(page)
    page.evaluate("() => window.relayClient.dropConnection()")
    assert wait_for_end(page) == "completed"

    stats = page.evaluate("() => window.relayClient.stats")
    assert (stats["drops"], stats["reconnects"]) == (1, 1), stats
    assert wire.sockets == 2
    actions = wire.sent_actions()
    assert [m["action"] for m in actions] == ["sendMessage", "resume"]
    turn = the_turn(decode_wire(wire.received))
    assert turn.outcome is TurnOutcome.COMPLETED
    assert actions[1]["turn_id"] == turn.turn_id
    assert actions[1]["after_seq"] >= 0, "the drop came before any message: not a mid-turn drop"
    end = [json.loads(m) for m in wire.received if '"audio_stream_end"' in m]
    assert end and end[-1]["total_samples"] * 2 == len(turn.pcm), "the gateway's turn is missing audio"
    assert scheduled_pcm(page) == turn.pcm
    assert_gapless(schedule(page))
    assert page.inner_text("#reply") == turn.text
    screenshot(page, "web-client-resumed.png")


def test_direct_agent_sse_mode_plays_the_agents_audio(client_page: ClientPage) -> None:
    page = client_page.page
    agent_requests: list[Request] = []
    page.on("request", lambda r: agent_requests.append(r) if r.url.endswith("/agent/invocations") else None)
    # The page may show the turn's end before Playwright reports the stream's request finished: wait for the event.
    with page.expect_request_finished(lambda r: r.url.endswith("/agent/invocations"), timeout=TURN_TIMEOUT_MS) as done:
        send(page, SHORT_PROMPT, route="direct")
        assert wait_for_end(page) == "completed"
    assert len(agent_requests) == 1, "one turn is one request to the agent"
    response = done.value.response()
    assert response is not None
    body = response.body()
    decoder = SseDecoder()
    events = [parse_event(e.data) for e in [*decoder.feed(body), *decoder.close()]]
    pcm = b"".join(b64decode(e.data) for e in events if isinstance(e, AudioChunk))
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert len(pcm) > 24_000 * 2
    assert scheduled_pcm(page) == pcm
    assert_gapless(schedule(page))
    assert page.inner_text("#reply") == text
    assert client_page.wire.sent == [], "local mode must not use the gateway"
    assert page.locator(".model").last.inner_text() == next(e.model for e in events if isinstance(e, AgentStart))
    screenshot(page, "web-client-direct.png")


CAPTIONS_PROMPT = "Captions on. Every word lights up."
CAPTIONS_JS = """() => {
  const turn = window.relayApp.metrics();
  return {log: turn.captions.log, words: turn.captions.track.words};
}"""


def test_captions_follow_the_players_clock_and_every_word_is_highlighted(client_page: ClientPage) -> None:
    """With captions on: the words highlighted advance in order while the audio plays, each no earlier than its
    start_s as known then on the player's clock (a word's estimate may be replaced by its final time later, tens of
    milliseconds away), and every reply word was highlighted by the end. (Stop's played_ms is checked in
    test_stop_sends_cancel_and_silences_playback.)"""
    page, wire = client_page.page, client_page.wire
    open_options(page)
    page.check("#captions")
    send(page, CAPTIONS_PROMPT)
    assert wait_for_end(page) == "completed"
    page.wait_for_function("() => !window.relayPlayer.playing", timeout=TURN_TIMEOUT_MS)
    captions: dict[str, Any] = page.evaluate(CAPTIONS_JS)
    turn = the_turn(decode_wire(wire.received))
    assert [m.get("timings") for m in wire.sent_actions() if m["action"] == "sendMessage"] == [True]
    assert [w.word for w in turn.words] == turn.text.split(), "the gateway sent every word's timing"
    assert [w["word"] for w in captions["words"]] == [w.word for w in turn.words]
    starts = [w["start_s"] for w in captions["words"]]
    log = [entry["index"] for entry in captions["log"]]
    assert log == sorted(set(log)) and log[-1] == len(starts) - 1, log
    assert len(log) > len(starts) // 2, f"the highlight jumped instead of following playback: {log}"
    assert all(entry["at"] >= entry["start"] for entry in captions["log"]), "highlighted before its time"
    # an estimate replaced later by its final time is off by tens of milliseconds at most
    assert all(entry["at"] >= starts[entry["index"]] - 0.1 for entry in captions["log"]), "highlighted far too early"
    assert page.locator("#reply .word.spoken").count() == page.locator("#reply .word").count() > 0
    screenshot(page, "web-client-captions.png")


AXE = Path(__file__).resolve().parents[2] / "web" / "node_modules" / "axe-core" / "axe.min.js"
PICKERS_JS = """() => ({
  first: [document.querySelector('#voice option').value, document.querySelector('#voice option').textContent],
  groups: [...document.querySelectorAll('#voice optgroup')].map((g) => [g.label, [...g.children].map((o) => o.value)]),
  last: document.querySelector('#voice').lastElementChild.value,
  langs: [...document.querySelectorAll('#lang option')].map((o) => o.value),
})"""


def serious_axe_violations(page: Page, selector: str) -> list[dict[str, Any]]:
    """axe-core's serious and critical findings within ``selector`` (tests/web/test_web_mobile.py checks the
    whole page on phones)."""
    assert AXE.exists(), "axe-core is missing: run `npm --prefix web ci` (make web-typecheck does)"
    page.add_script_tag(path=str(AXE))
    result: dict[str, Any] = page.evaluate("async (sel) => await axe.run(sel, {resultTypes: ['violations']})", selector)
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:5]}
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def test_voice_picker_groups_voices_by_language_and_a_turn_sends_voice_and_lang(client_page: ClientPage) -> None:
    """The voice select offers the server's default, then a group per Kokoro language in relay_core's order, then
    "Other…"; the language select the voice's own and the nine. A voice picked from its group and a language go
    into the turn's sendMessage, and the container speaks with that voice (the stack has the embedded Japanese
    voices: jm_kumo, reading this English prompt as en-us)."""
    page, wire = client_page.page, client_page.wire
    open_options(page)
    pickers: dict[str, Any] = page.evaluate(PICKERS_JS)
    assert pickers["first"] == ["", "Server default (af_heart when installed, else jf_alpha)"]
    assert [label for label, _ in pickers["groups"]] == [language.name for language in LANGUAGES]
    for (_, names), language in zip(pickers["groups"], LANGUAGES, strict=True):
        assert names and all(name[0] == language.letter for name in names), (language.code, names)
    assert sum(len(names) for _, names in pickers["groups"]) == 54
    assert pickers["last"] == "other voice", "Other… comes after the groups"
    assert pickers["langs"] == ["", *(language.code for language in LANGUAGES)]
    assert page.is_hidden("#voice-custom")

    page.select_option("#voice", "jm_kumo")
    page.select_option("#lang", "en-us")
    send(page, SHORT_PROMPT)
    assert wait_for_end(page) == "completed"

    sent = [m for m in wire.sent_actions() if m["action"] == "sendMessage"]
    assert [(m.get("voice"), m.get("lang")) for m in sent] == [("jm_kumo", "en-us")]
    starts = [json.loads(m) for m in wire.received if '"audio_stream_start"' in m]
    assert starts and starts[0]["voice"] == "jm_kumo", "the container spoke with the voice picked"
    turn = the_turn(decode_wire(wire.received))
    assert turn.outcome is TurnOutcome.COMPLETED and len(turn.pcm) > 0
    assert scheduled_pcm(page) == turn.pcm
    screenshot(page, "web-client-voice-picker.png")


def test_other_voice_reveals_a_field_and_the_direct_route_sends_its_blend_and_lang(client_page: ClientPage) -> None:
    """ "Other voice or blend…" reveals a labelled text field (the options stay free of serious axe findings with it
    shown); what is typed there and the language picked go into the direct route's agent payload, and the turn
    completes."""
    page = client_page.page
    open_options(page)
    page.select_option("#voice", "other voice")
    page.wait_for_selector("#voice-custom", state="visible")
    assert serious_axe_violations(page, "#options") == []
    page.fill("#voice-custom", "jf_alpha:0.6,jm_kumo:0.4")
    page.select_option("#lang", "en-gb")
    with page.expect_request(lambda r: r.url.endswith("/agent/invocations"), timeout=TURN_TIMEOUT_MS) as request:
        send(page, SHORT_PROMPT, route="direct")
    payload = request.value.post_data_json
    assert isinstance(payload, dict), "the agent request has a JSON body"
    assert (payload.get("voice"), payload.get("lang")) == ("jf_alpha:0.6,jm_kumo:0.4", "en-gb")
    assert wait_for_end(page) == "completed"
    assert client_page.wire.sent == [], "local mode must not use the gateway"

    page.select_option("#voice", "")
    page.wait_for_selector("#voice-custom", state="hidden")


def test_a_prompt_too_long_to_send_is_refused_with_a_notice_and_given_back(client_page: ClientPage) -> None:
    """The library refuses a message over one 32 KB gateway frame before sending it (no hang, no 1009): the turn
    ends rejected at once, the notice says why, and the text is back in the composer to shorten."""
    page, wire = client_page.page, client_page.wire
    wide = "語" * (limits.APIGW_FRAME_BYTES // 3)  # under MAX_PROMPT_CHARS, over 32 KB of UTF-8
    send(page, wide)
    assert wait_for_end(page) == "rejected"
    notice = page.inner_text("#notice")
    assert "shorten the prompt" in notice and "(limit_exceeded)" in notice, notice
    assert page.input_value("#prompt") == wide
    assert [m for m in wire.sent_actions() if m.get("action") == "sendMessage"] == []
    assert page.get_attribute("#connection", "data-state") == "open"


def test_new_conversation_button_starts_a_conversation_the_model_has_no_history_of(
    client_page: ClientPage, stack: RelayStack
) -> None:
    page, wire = client_page.page, client_page.wire

    def model_saw() -> list[tuple[str, str]]:
        request = stack.bedrock.last_request
        assert request is not None, "the agent never called the model"
        return [(message.role, message.text) for message in request.messages]

    for prompt in (SHORT_PROMPT, "A second turn follows it."):
        send(page, prompt)
        assert wait_for_end(page) == "completed"
    said = [text for role, text in model_saw() if role == "user"]
    assert said[-2:] == [SHORT_PROMPT, "A second turn follows it."], "the conversation goes on before"

    page.get_by_role("button", name="New conversation").click()
    page.wait_for_function("() => window.relayApp.conversations() === 1", timeout=30_000)
    assert page.locator("#turns .turn").count() == 0 and page.is_visible("#empty")
    send(page, "After starting over.")
    assert wait_for_end(page) == "completed"
    assert model_saw() == [("user", "After starting over.")]

    actions = [m["action"] for m in wire.sent_actions()]
    assert actions == ["sendMessage", "sendMessage", "newConversation", "sendMessage"]
    assert {"type": "conversation_started"} in [json.loads(m) for m in wire.received]
    screenshot(page, "web-client-new-conversation.png")
