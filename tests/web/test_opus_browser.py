"""Opus in the browser (Debian's Chromium, Playwright): @kokoro-relay/client picks WebCodecs' AudioDecoder and decodes
the recorded Opus turn (tests/web/fixtures/opus_tone.json, tests/web/opus_fixtures.py) in the page's context to
exactly each chunk's PCM-timeline samples, matching libopus's decode and the source tone; the page says "Opus".

The repository is served as static files on a loopback port (the page's modules and the fixture); no relay stack.
"""

from __future__ import annotations

import base64
import json
import math
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser

from tests.web.test_web_browser import CHROMIUM

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = json.loads((ROOT / "tests/web/fixtures/opus_tone.json").read_text())
MIN_SNR_VS_LIBOPUS_DB = 30.0
"""Chromium's Opus decoder (FFmpeg's or libopus) against libopus's: the same stream, near-identical samples."""
MIN_SNR_VS_SOURCE_DB = 8.0
"""Against the tone itself at 24 kbit/s (~9.5 dB); a decode off by pre_skip scores below 6 dB."""

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed: run `make browser`"),
    pytest.mark.timeout(300),
]

DECODE_JS = """async () => {
  const lib = await import("/web/client/index.js");
  const fixture = await (await fetch("/tests/web/fixtures/opus_tone.json")).json();
  const messages = fixture.messages.map((m) => JSON.parse(m));
  const start = messages.find((m) => m.type === "audio_stream_start");
  const choice = await lib.chooseOpusDecoder(null);
  if (choice.factory === null) return { decoder: null, reason: choice.reason };
  const stream = new lib.OpusStream({ factory: choice.factory, preSkip: start.pre_skip });
  const chunks = [];
  for (const chunk of messages.filter((m) => m.type === "audio_chunk")) {
    const packets = lib.splitPackets(lib.base64ToBytes(chunk.data), chunk.packet_bytes);
    const pcm = await stream.decodeChunk({ packets, sampleOffset: chunk.sample_offset, samples: chunk.samples });
    chunks.push(Array.from(pcm));
  }
  stream.close();
  return { decoder: choice.name, chunks };
}"""


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    """The repository over HTTP on 127.0.0.1 (a secure context: WebCodecs is there), on a free port."""
    handler = partial(_QuietHandler, directory=str(ROOT))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """No access log on stderr."""


def _int16(b64: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(b64), dtype="<i2").astype(np.float64)


def snr_db(want: np.ndarray, got: np.ndarray) -> float:
    noise = float(((want - got) ** 2).sum())
    return math.inf if noise == 0 else 10 * math.log10(float((want**2).sum()) / noise)


def test_webcodecs_decodes_the_recorded_turn_to_the_pcm_timeline(origin: str, browser: Browser) -> None:
    page = browser.new_page()
    try:
        page.goto(origin + "/tests/web/fixtures/")
        result = page.evaluate(DECODE_JS)
    finally:
        page.close()
    assert result["decoder"] == "webcodecs", result.get("reason")
    chunks = [json.loads(m) for m in FIXTURE["messages"] if '"audio_chunk"' in m]
    assert [len(c) for c in result["chunks"]] == [c["samples"] for c in chunks]
    got = np.concatenate([np.array(c, dtype=np.float64) for c in result["chunks"]])
    assert len(got) == FIXTURE["total_samples"]
    expected = np.concatenate([_int16(b) for b in FIXTURE["expected_pcm"]])
    source = _int16(FIXTURE["source_pcm"])
    assert snr_db(expected, got) >= MIN_SNR_VS_LIBOPUS_DB, snr_db(expected, got)
    assert snr_db(source, got) >= MIN_SNR_VS_SOURCE_DB, snr_db(source, got)


def test_the_page_asks_for_opus_and_says_so(origin: str, browser: Browser) -> None:
    """The page (no stack behind it: the gateway URL answers nothing) chooses Opus and shows it; ?audio=pcm: PCM."""
    page = browser.new_page()
    try:
        gateway = "ws://127.0.0.1:9/nothing"
        page.goto(f"{origin}/web/index.html?gateway={gateway}&token=t")
        page.wait_for_selector('#audio-format[data-format="opus"]', timeout=30_000)
        assert page.text_content("#audio-format") == "Opus"
        assert page.evaluate("() => window.relayClient.audioChoice.decoder") == "webcodecs"
        page.goto(f"{origin}/web/index.html?gateway={gateway}&token=t&audio=pcm")
        page.wait_for_function("() => window.relayClient !== undefined")
        page.evaluate("() => window.relayClient.audioReady")
        assert page.get_attribute("#audio-format", "data-format") == "pcm"
        assert page.text_content("#audio-format") == "PCM"
    finally:
        page.close()
