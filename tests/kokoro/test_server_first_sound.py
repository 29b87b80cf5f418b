"""First sound on a real server with the real model: the silence and first-fragment policies on every transport.
(A full instance's admission queue: test_server_admission.py.)"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect

from kokoro_server.engines import Engine
from kokoro_server.policy import RAW
from kokoro_server.silence import first_audible_sample, pcm16_to_float, silences
from relay_core import limits
from relay_core.speech_options import SpeechOptions
from relay_core.tts.client import AudioReceived, RequestEnded, TtsClientSession
from relay_core.tts.messages import SynthesisComplete, Synthesize

pytestmark = pytest.mark.slow

FIRST = "Your order left the warehouse this morning and should arrive by Thursday."
SECOND = "Thanks."


def ms(samples: int) -> float:
    return samples * 1000 / limits.SAMPLE_RATE


async def session_pcm(url: str, texts: list[str]) -> dict[str, bytes]:
    """One session, one request per text (sent at once, as the agent does): each request's PCM."""
    client = TtsClientSession()
    pcm: dict[str, bytearray] = {}
    async with connect(url, max_size=None, open_timeout=60) as ws:
        for i, text in enumerate(texts):
            await ws.send(client.synthesize(Synthesize(text=text, request_id=f"r{i}")).encode())
        ended = 0
        while ended < len(texts):
            for event in client.receive_frame(await ws.recv()):
                if isinstance(event, AudioReceived):
                    pcm.setdefault(event.request_id, bytearray()).extend(event.pcm)
                elif isinstance(event, RequestEnded):
                    assert isinstance(event.outcome, SynthesisComplete), event.outcome
                    ended += 1
    return {rid: bytes(data) for rid, data in pcm.items()}


def test_every_transport_speaks_by_the_same_policy(
    onnx_engine: Engine, tts_server: Any, solo_pcm: Callable[..., bytes]
) -> None:
    """The server's PCM on the WebSocket and over HTTP is the offline reference (tests/conftest.py ``solo_pcm``,
    each segment decoded once per session) for the same text and policy."""
    voice = onnx_engine.default_voice
    alone = solo_pcm(FIRST, options=SpeechOptions(voice))
    after = solo_pcm(SECOND, options=SpeechOptions(voice), previous=FIRST)
    raw = solo_pcm(FIRST, options=SpeechOptions(voice), policy=RAW)

    got = asyncio.run(asyncio.wait_for(session_pcm(tts_server.ws_url, [FIRST, SECOND]), 240))
    cut = solo_pcm(FIRST, options=SpeechOptions(voice), first_fragment_words=4)
    with httpx.Client(base_url=tts_server.http_url, timeout=240) as http:
        answer = http.post("/invocations", json={"text": FIRST, "format": "pcm"})
        asked = http.post("/invocations", json={"text": FIRST, "format": "pcm", "first_fragment_words": 4})
    assert answer.status_code == 200
    # with the decoder streamed (the default) the server leaves the first sentence whole; a request may still ask
    # for the first-fragment cut: two segments instead of one, so different audio
    assert alone == solo_pcm(FIRST, options=SpeechOptions(voice), first_fragment_words=0)
    assert asked.content == cut
    assert cut != alone

    # identical input gives identical PCM, on the WebSocket and over HTTP alike
    assert got["r0"] == alone
    assert answer.content == alone
    assert got["r1"] == after
    audio = pcm16_to_float(alone)
    first = first_audible_sample(audio)
    assert first is not None
    assert ms(first) <= 30  # the model's ~250 ms of leading padding is gone
    assert ms(first_audible_sample(pcm16_to_float(raw)) or 0) >= 150
    assert len(alone) < len(raw)  # and its trailing padding too
    whole = pcm16_to_float(got["r0"] + got["r1"])
    gaps = [ms(end - start) for start, end in silences(whole)]
    # the pause between the two requests is a sentence pause, and no silence inside the reply is long
    assert max(gaps) <= 450
    assert any(200 <= gap <= 450 for gap in gaps)
