"""The web app on phones: Debian's Chromium with Playwright's mobile emulation (viewport, touch, device scale
factor, mobile user agent) for two of Playwright's Chromium devices, against the whole local relay
(``RelayStack``: real gateway functions, agent with the speak model, Kokoro TTS).

Unlike tests/web/test_web_browser.py the browser runs with Chromium's default autoplay policy: audio plays only
because the page unlocks it on the first tap. What the gateway sent is read from the wire (Playwright's WebSocket
frames, decoded by relay_core's ``ClientSession``) and compared with what the page handed to Web Audio. The
accessibility check is axe-core (pinned in web/package-lock.json, installed by ``npm --prefix web ci``, which
``make test`` runs first). A screenshot per device goes to ``test-output/web/``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tests.web.test_web_browser import (
    CHROMIUM,
    OUTPUT_DIR,
    TURN_TIMEOUT_MS,
    Wire,
    assert_gapless,
    decode_wire,
    schedule,
    scheduled_pcm,
    the_turn,
    wait_for_audio,
    wait_for_end,
)

from relay_core.client.session import TurnOutcome

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page

    from relay_local.relay_stack import RelayStack

REPO = Path(__file__).resolve().parents[2]
AXE = REPO / "web" / "node_modules" / "axe-core" / "axe.min.js"
SW = REPO / "web" / "sw.js"
DEVICES = ("Galaxy S8", "Pixel 5")
"""Two of Playwright's devices that run on Chromium; the Galaxy S8 is the 360×740 phone."""
MOBILE_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
SHORT_PROMPT = "Hello from a phone."
LONG_PROMPT = "A phone on a train. The network comes and goes. Every word still arrives, once."
TOUCH_MIN_PX = 44

pytestmark = [
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="Debian chromium is not installed: run `make browser` (apt-get install chromium)"
    ),
    pytest.mark.timeout(900),
]


@pytest.fixture(scope="module")
def stack(relay_stack: RelayStack) -> RelayStack:
    return relay_stack


@pytest.fixture(scope="module")
def playwright() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    with sync_playwright() as running:
        yield running


@pytest.fixture(scope="module")
def browser(playwright: Any) -> Iterator[Browser]:
    """Debian's Chromium (never a downloaded one), headless, with its default autoplay policy."""
    launched = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=MOBILE_ARGS)
    try:
        yield launched
    finally:
        launched.close()


class Phone:
    """The app on one emulated device: the page, its browser context, the wire, the console."""

    def __init__(self, context: BrowserContext, page: Page, wire: Wire, console: list[str], device: str) -> None:
        self.context, self.page, self.wire, self.console, self.device = context, page, wire, console, device

    def tap_send(self, prompt: str) -> None:
        self.page.tap("#prompt")
        self.page.fill("#prompt", prompt)
        self.page.tap("#send")

    def screenshot(self, name: str) -> None:
        OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(OUTPUT_DIR / name))


def open_phone(playwright: Any, browser: Browser, stack: RelayStack, device: str) -> Phone:
    context = browser.new_context(**playwright.devices[device])
    page = context.new_page()
    wire = Wire()
    console: list[str] = []
    page.on("websocket", wire.attach)
    page.on("console", lambda msg: console.append(f"{msg.type}: {msg.text}"))
    page.on("pageerror", lambda err: console.append(f"pageerror: {err}"))
    page.on("response", lambda r: console.append(f"error: HTTP {r.status} {r.url}") if r.status >= 400 else None)
    page.goto(stack.web_url.rstrip("/") + "/?audio=pcm")  # compared with the wire's PCM sample for sample
    page.wait_for_function("() => window.relayApp !== undefined")
    page.evaluate("() => window.relayApp.ready")
    page.wait_for_selector('#connection[data-state="open"]', timeout=30_000)
    return Phone(context, page, wire, console, device)


@pytest.fixture(params=DEVICES)
def phone(request: pytest.FixtureRequest, playwright: Any, browser: Browser, stack: RelayStack) -> Iterator[Phone]:
    opened = open_phone(playwright, browser, stack, request.param)
    try:
        yield opened
    finally:
        opened.context.close()
    assert not [line for line in opened.console if line.startswith(("pageerror", "error"))], opened.console


def slug(device: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-")


LAYOUT_JS = """() => {
  const box = (sel) => {
    const r = document.querySelector(sel).getBoundingClientRect();
    return [r.top, r.bottom, r.width, r.height];
  };
  const selector = 'button, summary, textarea, select, input[type=text], .route label, label.check';
  const targets = [...document.querySelectorAll(selector)]
    .filter((el) => el.getClientRects().length > 0)
    .map((el) => {
      const r = el.getBoundingClientRect();
      return {what: el.id || el.textContent.trim().slice(0, 30), w: r.width, h: r.height};
    });
  return {
    innerWidth, innerHeight,
    scrollWidth: document.documentElement.scrollWidth,
    bodyScrollWidth: document.body.scrollWidth,
    header: box('.bar'), dock: box('.dock'), composer: box('#composer'),
    targets,
  };
}"""


def check_layout(page: Page) -> dict[str, Any]:
    """No horizontal scroll, a one-line header, the composer pinned at the bottom, touch targets ≥ 44 px."""
    layout: dict[str, Any] = page.evaluate(LAYOUT_JS)
    assert layout["scrollWidth"] <= layout["innerWidth"], layout
    assert layout["bodyScrollWidth"] <= layout["innerWidth"], layout
    assert layout["header"][3] <= 56, f"the header wraps: {layout['header']}"
    assert abs(layout["dock"][1] - layout["innerHeight"]) <= 1, f"the composer is not pinned at the bottom: {layout}"
    small = [t for t in layout["targets"] if t["h"] < TOUCH_MIN_PX or t["w"] < TOUCH_MIN_PX]
    assert not small, f"touch targets under {TOUCH_MIN_PX} px: {small}"
    return layout


def axe_violations(page: Page) -> list[dict[str, Any]]:
    assert AXE.exists(), "axe-core is missing: run `npm --prefix web ci` (make web-typecheck does)"
    page.add_script_tag(path=str(AXE))
    result: dict[str, Any] = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:5]}
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def test_phone_send_by_tap_plays_exact_gapless_audio_in_an_accessible_layout(phone: Phone) -> None:
    page, wire = phone.page, phone.wire
    check_layout(page)
    assert page.evaluate("() => window.relayApp.audio().unlocked") is False, "audio must wait for a tap"
    phone.tap_send(SHORT_PROMPT)
    assert wait_for_end(page) == "completed"

    assert page.evaluate("() => window.relayApp.audio()") == {"unlocked": True, "state": "running"}
    turn = the_turn(decode_wire(wire.received))
    assert turn.outcome is TurnOutcome.COMPLETED
    assert len(turn.pcm) > 24_000, "expected at least half a second of speech"
    assert scheduled_pcm(page) == turn.pcm
    assert_gapless(schedule(page))
    assert page.inner_text("#reply") == turn.text
    assert page.locator("#turns .turn").count() == 1
    assert page.inner_text("#turns .turn .bubble.user") == SHORT_PROMPT
    assert page.evaluate("() => window.relayApp.wakeLock.requests") >= 1, "the screen wake lock was not asked for"
    check_layout(page)  # with a turn on screen
    page.tap("#options summary")
    check_layout(page)  # the options unfolded: every control still a touch target, still no horizontal scroll
    assert axe_violations(page) == []
    page.tap("#options summary")
    phone.screenshot(f"web-mobile-{slug(phone.device)}.png")


@pytest.fixture
def pixel(playwright: Any, browser: Browser, stack: RelayStack) -> Iterator[Phone]:
    opened = open_phone(playwright, browser, stack, "Pixel 5")
    try:
        yield opened
    finally:
        opened.context.close()


@pytest.fixture
def galaxy(playwright: Any, browser: Browser, stack: RelayStack) -> Iterator[Phone]:
    opened = open_phone(playwright, browser, stack, "Galaxy S8")
    try:
        yield opened
    finally:
        opened.context.close()


def assert_turn_exact(phone: Phone) -> None:
    turn = the_turn(decode_wire(phone.wire.received))
    assert turn.outcome is TurnOutcome.COMPLETED
    assert scheduled_pcm(phone.page) == turn.pcm
    assert_gapless(schedule(phone.page))
    assert phone.page.inner_text("#reply") == turn.text == LONG_PROMPT


def test_offline_mid_turn_then_online_completes_byte_identical(pixel: Phone) -> None:
    page = pixel.page
    pixel.tap_send(LONG_PROMPT)
    wait_for_audio(page)
    pixel.context.set_offline(True)
    page.wait_for_selector('#connection:not([data-state="open"])', timeout=30_000)
    time.sleep(1.5)  # offline for a while: reconnect attempts fail
    assert page.get_attribute("#connection", "data-state") in ("reconnecting", "connecting")
    pixel.context.set_offline(False)
    assert wait_for_end(page) == "completed"
    assert pixel.wire.sockets >= 2
    actions = pixel.wire.sent_actions()
    assert actions[0]["action"] == "sendMessage" and "resume" in [a["action"] for a in actions[1:]]
    assert_turn_exact(pixel)
    pixel.screenshot("web-mobile-after-offline.png")


HIDE_JS = """() => {
  Object.defineProperty(document, 'visibilityState', {get: () => window.__visibility ?? 'visible', configurable: true});
  Object.defineProperty(document, 'hidden', {get: () => window.__visibility === 'hidden', configurable: true});
  window.__visibility = 'hidden';
  document.dispatchEvent(new Event('visibilitychange'));
  document.dispatchEvent(new Event('freeze'));
}"""
SHOW_JS = """() => {
  const running = ['sending', 'streaming'].includes(window.relayApp.metrics().status);
  window.__visibility = 'visible';
  document.dispatchEvent(new Event('resume'));
  document.dispatchEvent(new Event('visibilitychange'));
  return running;
}"""


def test_page_hidden_and_frozen_mid_turn_then_shown_completes(galaxy: Phone) -> None:
    """The page goes to the background mid-turn: hidden, frozen for seconds (no JavaScript runs while the gateway
    keeps sending), then resumed and shown. Headless Chromium keeps every page visible and ignores
    Page.setWebLifecycleState (its timers keep running), so the freeze is the debugger pausing the page's
    JavaScript, and the lifecycle events are dispatched around it as a phone's browser fires them."""
    page = galaxy.page
    cdp = galaxy.context.new_cdp_session(page)
    galaxy.tap_send(LONG_PROMPT)
    wait_for_audio(page)
    page.evaluate(HIDE_JS)
    cdp.send("Debugger.enable")
    cdp.send("Debugger.pause")
    time.sleep(4)  # frozen: the socket's messages wait in the browser
    cdp.send("Debugger.resume")
    cdp.send("Debugger.disable")
    running_when_shown = page.evaluate(SHOW_JS)
    assert page.evaluate("() => window.relayApp.lifecycle") == {"freeze": 1, "resume": 1, "hidden": 1, "shown": 1}
    assert wait_for_end(page) == "completed"
    actions = [a["action"] for a in galaxy.wire.sent_actions()]
    assert actions[0] == "sendMessage"
    if running_when_shown:  # the frozen page's queued messages did not finish the turn: shown, it checks at once
        assert "resume" in actions, actions
    assert_turn_exact(galaxy)


def test_stop_by_tap_cancels_and_silences(galaxy: Phone) -> None:
    page, wire = galaxy.page, galaxy.wire
    galaxy.tap_send(LONG_PROMPT)
    page.wait_for_function("() => window.relayPlayer.playedSeconds() > 0", timeout=TURN_TIMEOUT_MS)
    page.tap("#stop")
    buffers_at_stop = len(schedule(page)["buffers"])
    assert wait_for_end(page) == "cancelled"
    actions = wire.sent_actions()
    assert [a["action"] for a in actions] == ["sendMessage", "cancel"]
    assert actions[1]["turn_id"] == actions[0]["turn_id"] and actions[1]["played_ms"] >= 0
    plan = schedule(page)
    assert len(plan["buffers"]) == buffers_at_stop and plan["active"] == 0
    assert page.is_enabled("#send") and page.is_disabled("#stop")


SHELL_JS = """async () => {
  const reg = await navigator.serviceWorker.ready;
  const cache = await caches.open((await caches.keys())[0]);
  const keys = (await cache.keys()).map((r) => new URL(r.url).pathname);
  const manifest = await (await fetch(document.querySelector('link[rel=manifest]').href)).json();
  return {scope: reg.scope, cached: keys, manifest, controlled: navigator.serviceWorker.controller !== null,
          loaded: performance.getEntriesByType('resource').map((e) => new URL(e.name))
            .filter((u) => u.origin === location.origin).map((u) => u.pathname)};
}"""


def test_installable_and_the_service_worker_caches_only_the_app_shell(galaxy: Phone) -> None:
    page = galaxy.page
    # reload once the worker is active: a navigation that starts while it is still installing may load a page it
    # never controls (its clients.claim() can run before that page exists)
    page.evaluate("async () => { await navigator.serviceWorker.ready; }")
    page.reload()
    page.wait_for_function("() => navigator.serviceWorker.controller !== null", timeout=60_000)
    shell: dict[str, Any] = page.evaluate(SHELL_JS)
    manifest = shell["manifest"]
    assert manifest["display"] == "standalone" and manifest["start_url"]
    sizes = {icon["sizes"] for icon in manifest["icons"]}
    assert {"192x192", "512x512"} <= sizes
    cached = set(shell["cached"])
    listed = {"/" + p.removeprefix("./") for p in re.findall(r'^\s+"([^"]+)",$', SW.read_text(), re.MULTILINE)}
    assert cached == listed, "the cache holds exactly the shell"
    assert "/config.json" not in cached, "the token must never be cached"
    loaded = {p for p in shell["loaded"] if p.endswith((".js", ".css", ".png", ".webmanifest"))}
    assert loaded <= listed, f"the page loads files the shell does not list: {sorted(loaded - listed)}"
    # Offline, the shell still opens (from the cache) and says it is not connected.
    galaxy.context.set_offline(True)
    page.reload()
    page.wait_for_selector("#composer")
    assert page.locator("#send").is_visible()
    galaxy.context.set_offline(False)
    galaxy.console.clear()  # the offline reload's failed config.json and WebSocket are expected
