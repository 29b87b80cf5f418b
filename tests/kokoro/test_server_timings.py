"""Word timings on the container's three transports (WebSocket, ``/invocations`` SSE, captioned speech), with the
real int8 model on loopback: opt-in, before each segment's audio, every written word in order, inside the audio;
with streaming within a segment off (the default) and on (``KOKORO_STREAM_DECODER``: a segment's words then come
in several messages, each before the audio of its words)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect

from kokoro_server.silence import pcm16_to_float, silences
from relay_core import limits
from relay_core.agent.events import AudioChunk, AudioStreamEnd, parse_event
from relay_core.audio import b64decode
from relay_core.sse import SseDecoder
from relay_core.tts.messages import Synthesize, serialize
from relay_core.word_timings import (
    CAPTIONED_SPEECH_PATH,
    WORD_TIMINGS_TYPE,
    WordTiming,
    WordTimings,
    apply_word_timings,
    parse_captioned_speech,
    parse_word_timings,
)

pytestmark = pytest.mark.slow

TEXT = "Hi there. Then 1,234 words."
WORDS = ["Hi", "there.", "Then", "1,234", "words."]


@pytest.fixture(scope="module", params=["whole", "streamed"])
def tts_server(
    request: pytest.FixtureRequest, tts_server: Any, serve_tts: Callable[..., AbstractContextManager[Any]]
) -> Iterator[Any]:
    """The int8 server as deployed (segments whole), then one with ``stream_decoder`` on."""
    if request.param == "whole":
        yield tts_server
        return
    with serve_tts(request.getfixturevalue("onnx_engine"), stream_decoder=True) as server:
        yield server


def _check_words(words: list[WordTiming], duration_s: float) -> None:
    assert [w.word for w in words] == WORDS
    assert all(w.final for w in words), "every estimate was replaced by its final timing"
    assert all(0 <= w.start_s < w.end_s <= duration_s + 1e-3 for w in words)
    WordTimings("check", tuple(words))  # ordered, never overlapping


def test_websocket_sends_timings_before_each_segment_only_when_asked(tts_server: Any) -> None:
    async def go() -> list[str | bytes]:
        frames: list[str | bytes] = []
        async with connect(tts_server.ws_url) as ws:
            await ws.send(serialize(Synthesize(text=TEXT, request_id="timed", timings=True)).encode())
            await ws.send(serialize(Synthesize(text="Plain.", request_id="plain")))
            await ws.send(json.dumps({"type": "close"}))
            async with asyncio.timeout(180):
                async for frame in ws:
                    frames.append(frame)
        return frames

    frames = asyncio.run(go())
    control = [(i, json.loads(f)) for i, f in enumerate(frames) if isinstance(f, str)]
    timed = [(i, parse_word_timings(m)) for i, m in control if m["type"] == WORD_TIMINGS_TYPE]
    assert {t.request_id for _, t in timed} == {"timed"}, "a request without timings gets none"
    plain_start = next(i for i, m in control if m.get("request_id") == "plain" and m["type"] == "synthesis_start")
    assert all(i < plain_start for i, _ in timed)
    for index, _ in timed:
        assert isinstance(frames[index + 1], bytes), "each word_timings frame comes right before its segment's PCM"
    pcm = b"".join(f for i, f in enumerate(frames) if isinstance(f, bytes) and i < plain_start)
    words: list[WordTiming] = []
    for _, timings in timed:
        apply_word_timings(words, timings)
    _check_words(words, len(pcm) / (2 * limits.SAMPLE_RATE))


def test_timings_never_hold_audio_back(tts_server: Any, assert_timed_before_audio: Callable[[Any], list[Any]]) -> None:
    """The same text on two fresh sessions, one timed, one not: the binary frames are the same, one for one (no
    audio waits for a timing), and every word of the timed one is timed before its first frame of audio."""
    text = "Streaming word timings must never hold the voice back, not even for a moment. Then it ends."

    async def frames(timings: bool) -> list[str | bytes]:
        received: list[str | bytes] = []
        async with connect(tts_server.ws_url, max_size=None) as ws:
            await ws.send(serialize(Synthesize(text=text, request_id="r", timings=timings)))
            await ws.send(json.dumps({"type": "close"}))
            async with asyncio.timeout(180):
                async for frame in ws:
                    received.append(frame)
        return received

    timed, untimed = asyncio.run(frames(True)), asyncio.run(frames(False))
    assert [f for f in timed if isinstance(f, bytes)] == [f for f in untimed if isinstance(f, bytes)]
    output = [
        f if isinstance(f, bytes) else parse_word_timings(f)
        for f in timed
        if isinstance(f, bytes) or json.loads(f)["type"] == WORD_TIMINGS_TYPE
    ]
    words = assert_timed_before_audio(output)
    assert [w.word for w in words] == text.split()


def _sse(body: bytes) -> list[tuple[str, str]]:
    decoder = SseDecoder()
    events = [*decoder.feed(body), *decoder.close()]
    return [(event.event, event.data) for event in events]


def test_sse_and_captioned_speech_carry_the_same_timings(tts_server: Any) -> None:
    with httpx.Client(base_url=tts_server.http_url, timeout=180) as http:
        # off by default: any text shows it, a short one costs little
        untimed = http.post("/invocations", json={"text": "Plain."}, headers={"Accept": "text/event-stream"})
        timed = http.post("/invocations", json={"text": TEXT, "timings": True}, headers={"Accept": "text/event-stream"})
        captioned = http.post(CAPTIONED_SPEECH_PATH, json={"input": TEXT, "response_format": "pcm"})
        refused = http.post(CAPTIONED_SPEECH_PATH, json={"input": TEXT, "response_format": "wma"})
    assert WORD_TIMINGS_TYPE not in {name for name, _ in _sse(untimed.content)}, "off by default"
    words: list[WordTiming] = []
    pcm = b""
    for name, data in _sse(timed.content):
        if name == WORD_TIMINGS_TYPE:
            timings = parse_word_timings(data)
            assert timings.request_id
            # a word timed for the first time: its audio has not been sent yet, it starts at or after the audio so far
            known = len(words)
            apply_word_timings(words, timings)
            assert all(w.start_s >= len(pcm) / (2 * limits.SAMPLE_RATE) - 1e-3 for w in words[known:])
            continue
        event = parse_event(data)
        if isinstance(event, AudioChunk):
            pcm += b64decode(event.data)
        elif isinstance(event, AudioStreamEnd):
            _check_words(words, event.duration_s)
    _check_words(words, len(pcm) / (2 * limits.SAMPLE_RATE))
    # the pause between the two sentences (the model's padding trimmed, the policy's pause put in) lies between
    # the last word of the first and the first word of the second (25 ms of slack)
    there, then = words[1], words[2]
    gap_start, gap_end = max(silences(pcm16_to_float(pcm)), key=lambda run: run[1] - run[0])
    assert there.end_s <= gap_start / limits.SAMPLE_RATE + 0.025
    assert then.start_s >= gap_end / limits.SAMPLE_RATE - 0.025

    assert captioned.status_code == 200
    answer = parse_captioned_speech(captioned.content)
    assert answer.format == "pcm" and answer.sample_rate == limits.SAMPLE_RATE
    assert b64decode(answer.audio) == pcm, "the same request gives the same audio on both routes"
    assert list(answer.words) == words
    assert answer.duration_s == pytest.approx(len(pcm) / (2 * limits.SAMPLE_RATE), abs=1e-3)
    assert refused.status_code == 400
    assert "response_format" in refused.json()["error"]["message"]
