"""The OpenAI-compatible routes as OpenAI clients use them, the formats' real lengths, and text the G2P cannot
speak; with the real int8 model on loopback."""

from __future__ import annotations

import asyncio
import io
import json
import wave
from typing import Any

import av
import httpx
import pytest
from websockets.asyncio.client import connect

from kokoro_server.engines.model_files import default_voices_path
from kokoro_server.engines.voice_packs import OFFICIAL_TABLE_SHA256, read_packs, table_sha256
from relay_core import limits
from relay_core.audio import b64decode
from relay_core.sse import SseDecoder
from relay_core.tts.http_events import OPENAI_MODELS, OPENAI_SSE_AUDIO_DELTA, OPENAI_SSE_AUDIO_DONE
from relay_core.tts.messages import TtsErrorCode

pytestmark = pytest.mark.slow

SPEECH = "/v1/audio/speech"
EMBEDDED = read_packs(default_voices_path())
"""The shipped voices' tables: whether each is an official pack is computed here from the pinned digests."""


def client(server: Any) -> httpx.Client:
    return httpx.Client(base_url=server.http_url, timeout=120)


def decoded_samples(data: bytes) -> int:
    with av.open(io.BytesIO(data), mode="r") as container:
        return sum(frame.samples for frame in container.decode(container.streams.audio[0]))


def flac_total_samples(data: bytes) -> int:
    """STREAMINFO's total-samples field (36 bits; 0 means "unknown")."""
    assert data[:4] == b"fLaC"
    info = data[8 : 8 + 34]
    return int.from_bytes(info[10:18], "big") & ((1 << 36) - 1)


def test_openai_speed_range_voice_names_and_errors_that_name_input(tts_server: Any) -> None:
    with client(tts_server) as http:
        by_alias = http.post(
            SPEECH, json={"model": "tts-1", "input": "Yes.", "voice": "alloy", "response_format": "pcm"}
        )
        voices = http.get("/v1/audio/voices").json()
        mapped = voices["openai_voices"]["alloy"]
        by_name = http.post(SPEECH, json={"input": "Yes.", "voice": mapped, "response_format": "pcm"})
        fast = http.post(SPEECH, json={"input": "Yes.", "voice": mapped, "response_format": "pcm", "speed": 4.0})
        too_fast = http.post(SPEECH, json={"input": "Yes.", "speed": 4.5})
        empty = http.post(SPEECH, json={"input": "  "})
        missing = http.post(SPEECH, json={"text": "Yes."})
        models = http.get("/v1/models").json()
    assert by_alias.status_code == 200
    assert by_alias.content == by_name.content  # alloy is that configured voice
    assert len(by_name.content) > 2 * len(fast.content) > 0  # 4.0 is accepted and speaks faster
    assert too_fast.status_code == 400
    assert "0.25 and 4.0" in too_fast.json()["error"]["message"]
    for reply in (empty, missing):
        assert reply.status_code == 400
        assert "'input'" in reply.json()["error"]["message"]
    assert [m["id"] for m in models["data"]] == list(OPENAI_MODELS)
    assert models["object"] == "list"
    details = {d["name"]: d for d in voices["details"]}
    assert (details["jf_alpha"]["language"], details["jf_alpha"]["gender"]) == ("Japanese", "female")
    assert (details["jm_kumo"]["language"], details["jm_kumo"]["gender"]) == ("Japanese", "male")
    assert details["jm_kumo"]["speaks"] == "ja"  # its own language; Latin words in it are read as en-us
    embedded = {name: table_sha256(table) == OFFICIAL_TABLE_SHA256.get(name) for name, table in EMBEDDED.items()}
    assert {name: details[name]["official"] for name in embedded} == embedded
    assert voices["openai_voices"]["onyx"] == "jm_kumo"
    assert voices["openai_voices"]["alloy"].startswith("jf_")


def test_openai_sse_stream_format_carries_the_same_audio(tts_server: Any) -> None:
    body = {"input": "One. Two.", "voice": "jf_alpha", "response_format": "pcm"}
    with client(tts_server) as http:
        plain = http.post(SPEECH, json=body)
        sse = http.post(SPEECH, json={**body, "stream_format": "sse"})
        bad = http.post(SPEECH, json={**body, "stream_format": "ws"})
    assert sse.status_code == 200
    assert sse.headers["content-type"].startswith("text/event-stream")
    decoder = SseDecoder()
    events = [json.loads(e.data) for e in [*decoder.feed(sse.content), *decoder.close()]]
    *deltas, done = events
    assert {e["type"] for e in deltas} == {OPENAI_SSE_AUDIO_DELTA}
    assert len(deltas) >= 2
    assert done["type"] == OPENAI_SSE_AUDIO_DONE
    assert done["usage"]["input_tokens"] == len(body["input"])
    assert b"".join(b64decode(e["audio"]) for e in deltas) == plain.content
    assert bad.status_code == 400
    assert "stream_format" in bad.json()["error"]["message"]


def test_whole_files_carry_their_real_length(tts_server: Any) -> None:
    with client(tts_server) as http:
        pcm = http.post("/invocations", json={"text": "Yes.", "format": "pcm"}).content
        openai_wav = http.post(SPEECH, json={"input": "Yes.", "voice": "jf_alpha", "response_format": "wav"})
        flac = http.post("/invocations", json={"text": "Yes.", "format": "flac", "stream": False})
        openai_flac = http.post(SPEECH, json={"input": "Yes.", "voice": "jf_alpha", "response_format": "flac"})
    samples = len(pcm) // limits.SAMPLE_WIDTH_BYTES
    with wave.open(io.BytesIO(openai_wav.content)) as read_back:
        assert read_back.getnframes() == samples  # not 0x7FFFFFFF frames (24.8 days)
        assert read_back.getframerate() == limits.SAMPLE_RATE
    assert flac_total_samples(flac.content) == samples
    assert flac_total_samples(openai_flac.content) == samples
    assert decoded_samples(flac.content) == samples


def test_aac_and_a_chosen_mp3_bitrate(tts_server: Any) -> None:
    text = "Yes, one two."
    with client(tts_server) as http:
        aac = http.post(SPEECH, json={"input": text, "voice": "jf_alpha", "response_format": "aac"})
        low = http.post("/invocations", json={"text": text, "format": "mp3", "stream": False, "bitrate_kbps": 32})
        high = http.post("/invocations", json={"text": text, "format": "mp3", "stream": False, "bitrate_kbps": 192})
        not_lossy = http.post("/invocations", json={"text": text, "format": "wav", "bitrate_kbps": 64})
    assert aac.status_code == 200
    assert aac.headers["content-type"] == "audio/aac"
    assert decoded_samples(aac.content) > 0.3 * limits.SAMPLE_RATE
    duration = float(low.headers["X-Audio-Duration"])
    assert len(low.content) * 8 / duration == pytest.approx(32_000, rel=0.2)
    assert len(high.content) * 8 / duration == pytest.approx(192_000, rel=0.2)
    assert decoded_samples(low.content) > 0 and decoded_samples(high.content) > 0
    assert not_lossy.status_code == 400
    assert "bitrate_kbps" in not_lossy.json()["error"]["message"]


async def refused_then_spoken(
    ws_url: str, refused: dict[str, Any], spoken: dict[str, Any]
) -> tuple[dict[str, Any], bytes]:
    """On one session: send ``refused`` and read its one answer (the refusal), then ``spoken`` and collect its PCM
    until its ``synthesis_complete`` (the session went on)."""
    async with connect(ws_url, max_size=None) as ws:
        await ws.send(json.dumps(refused))
        refusal = json.loads(await asyncio.wait_for(ws.recv(), 30))
        await ws.send(json.dumps(spoken))
        audio = b""
        while True:
            frame = await asyncio.wait_for(ws.recv(), 120)
            if isinstance(frame, bytes):
                audio += frame
            elif json.loads(frame)["type"] == "synthesis_complete":
                return refusal, audio


def test_japanese_is_spoken_and_a_script_the_g2p_cannot_speak_is_refused_everywhere(tts_server: Any) -> None:
    russian = "Привет, как дела?"
    with client(tts_server) as http:
        japanese = http.post("/invocations", json={"text": "こんにちは。", "format": "pcm", "voice": "jf_alpha"})
        invocation = http.post("/invocations", json={"text": russian, "request_id": "ru"})
        openai = http.post(SPEECH, json={"input": russian})

    refusal, audio = asyncio.run(
        refused_then_spoken(
            tts_server.ws_url, {"text": russian, "request_id": "ru"}, {"text": "Still here.", "request_id": "en"}
        )
    )
    assert japanese.status_code == 200
    seconds = len(japanese.content) / (limits.SAMPLE_WIDTH_BYTES * limits.SAMPLE_RATE)
    assert 0.4 < seconds < 2.5  # "konnichiwa", not five times "Japanese letter" (about 5 s)
    for reply in (invocation, openai):
        assert reply.status_code == 400
        error = reply.json()["error"]
        assert error["code"] == TtsErrorCode.UNSUPPORTED_TEXT
        assert "Russian" in error["message"] and "none of Kokoro's languages" in error["message"]
    assert "'input'" in openai.json()["error"]["message"]
    assert (refusal["type"], refusal["code"], refusal["request_id"]) == ("error", "unsupported_text", "ru")
    assert refusal["rejected"] is True
    assert audio  # the session went on


def test_lang_chooses_the_language_on_every_route(tts_server: Any) -> None:
    hindi = "नमस्ते, आप कैसे हैं?"
    with client(tts_server) as http:
        refused = http.post("/invocations", json={"text": hindi, "format": "pcm"})
        spoken = http.post("/invocations", json={"text": hindi, "format": "pcm", "lang": "hi"})
        openai = http.post(SPEECH, json={"input": hindi, "response_format": "pcm", "lang": "h"})
        unknown = http.post("/invocations", json={"text": "Hi.", "lang": "xx"})
    assert refused.status_code == 400
    assert "'hi' (Hindi)" in refused.json()["error"]["message"], "the refusal names the language that speaks it"
    assert (spoken.status_code, openai.status_code) == (200, 200)
    assert spoken.content == openai.content, "the same language, voice and text give the same speech"
    assert 0.8 < len(spoken.content) / (limits.SAMPLE_WIDTH_BYTES * limits.SAMPLE_RATE) < 4.0
    assert unknown.status_code == 400 and "en-us, en-gb, es" in unknown.json()["error"]["message"]

    refusal, audio = asyncio.run(
        refused_then_spoken(
            tts_server.ws_url,
            {"text": hindi, "request_id": "no-lang"},
            {"text": hindi, "request_id": "hi", "lang": "hi"},
        )
    )
    assert refusal["code"] == "unsupported_text"
    assert audio == spoken.content, "the session speaks what /invocations speaks"
