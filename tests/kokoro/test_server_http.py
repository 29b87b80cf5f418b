"""``/ping``, ``/invocations`` (stream, whole, SSE, every format) and the OpenAI routes, with the real model."""

from __future__ import annotations

import io
import json
import random
import struct
from typing import Any

import av
import httpx
import numpy as np
import pytest

from relay_core import limits
from relay_core.agent.events import AudioChunk, AudioStreamEnd, AudioStreamStart, parse_event
from relay_core.audio import STREAMING_SIZE, b64decode
from relay_core.sse import SseDecoder, SseEvent
from relay_core.tts.http_events import (
    HEADER_AUDIO_DURATION,
    HEADER_CHARACTERS,
    HEADER_INFERENCE_TIME_MS,
    HEADER_RTF,
)

pytestmark = pytest.mark.slow

TEXT = "Hello there."


def client(server: Any) -> httpx.Client:
    return httpx.Client(base_url=server.http_url, timeout=120)


def decode_audio(data: bytes) -> tuple[int, int]:
    """(sample rate, samples) of an encoded file, decoded by FFmpeg through PyAV."""
    with av.open(io.BytesIO(data), mode="r") as container:
        stream = container.streams.audio[0]
        samples = 0
        for frame in container.decode(stream):
            samples += frame.samples
        return stream.rate, samples


def test_ping_is_healthy_once_loaded(tts_server: Any) -> None:
    with client(tts_server) as http:
        reply = http.get("/ping")
    assert reply.status_code == 200
    assert reply.json()["status"] == "healthy"


def test_streamed_wav_has_streaming_sizes_and_arrives_per_segment(tts_server: Any) -> None:
    pieces: list[bytes] = []
    with (
        client(tts_server) as http,
        http.stream("POST", "/invocations", json={"text": "One. Two.", "voice": "jf_alpha"}) as reply,
    ):
        assert reply.status_code == 200
        assert reply.headers["content-type"] == "audio/wav"
        pieces.extend(reply.iter_raw())
    body = b"".join(pieces)
    assert body[:4] == b"RIFF"
    assert body[8:16] == b"WAVEfmt "
    riff_size, data_size = struct.unpack_from("<I", body, 4)[0], struct.unpack_from("<I", body, 40)[0]
    assert riff_size == data_size == STREAMING_SIZE
    assert struct.unpack_from("<I", body, 24)[0] == limits.SAMPLE_RATE
    assert len(body) - 44 > limits.SAMPLE_RATE  # more than half a second of s16 audio
    assert len(pieces) >= 2  # header and segments left as they were produced, not as one block


def test_pcm_stream_equals_whole_wav_payload(tts_server: Any) -> None:
    with client(tts_server) as http:
        pcm = http.post("/invocations", json={"text": TEXT, "format": "pcm"}).content
        whole = http.post("/invocations", json={"text": TEXT, "stream": False})
    assert whole.status_code == 200
    assert whole.content[:4] == b"RIFF"
    data_size = struct.unpack_from("<I", whole.content, 40)[0]
    assert data_size == len(whole.content) - 44 == len(pcm)
    assert whole.content[44:] == pcm  # the same model output either way


def test_non_streaming_answer_carries_timing_headers(tts_server: Any) -> None:
    with client(tts_server) as http:
        reply = http.post("/invocations", json={"text": TEXT, "stream": False, "format": "pcm"})
    assert reply.status_code == 200
    duration = float(reply.headers[HEADER_AUDIO_DURATION])
    assert duration == pytest.approx(len(reply.content) / 48_000, abs=1e-3)
    inference_ms = float(reply.headers[HEADER_INFERENCE_TIME_MS])
    assert inference_ms > 0
    assert float(reply.headers[HEADER_RTF]) == pytest.approx(inference_ms / 1000 / duration, rel=0.01)
    assert int(reply.headers[HEADER_CHARACTERS]) == len(TEXT)


@pytest.mark.parametrize(("fmt", "media_type"), [("mp3", "audio/mpeg"), ("opus", "audio/ogg"), ("flac", "audio/flac")])
@pytest.mark.parametrize("stream", [True, False])
def test_compressed_formats_decode(tts_server: Any, fmt: str, media_type: str, stream: bool) -> None:
    with client(tts_server) as http:
        reply = http.post("/invocations", json={"text": "Yes.", "format": fmt, "stream": stream})
    assert reply.status_code == 200
    assert reply.headers["content-type"] == media_type
    rate, samples = decode_audio(reply.content)
    assert samples > 0.3 * rate  # at least a third of a second decodes
    if fmt == "flac":
        assert rate == limits.SAMPLE_RATE


def sse_events(body: bytes, rng: random.Random) -> list[SseEvent]:
    """Decode ``body`` fed in random pieces, as a re-chunking transport would deliver it."""
    decoder = SseDecoder()
    events: list[SseEvent] = []
    position = 0
    while position < len(body):
        step = rng.randint(1, 97)
        events.extend(decoder.feed(body[position : position + step]))
        position += step
    events.extend(decoder.close())
    return events


def test_sse_reassembles_under_arbitrary_rechunking(tts_server: Any) -> None:
    with client(tts_server) as http:
        reply = http.post(
            "/invocations",
            json={"text": "One. Two.", "request_id": "sse-1"},
            headers={"Accept": "text/event-stream"},
        )
        reference = http.post("/invocations", json={"text": "One. Two.", "format": "pcm"}).content
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/event-stream")
    for seed in range(5):
        events = [parse_event(e.data) for e in sse_events(reply.content, random.Random(seed))]
        start, *chunks, end = events
        assert isinstance(start, AudioStreamStart)
        assert start.format == limits.PCM_FORMAT
        assert start.sample_rate == limits.SAMPLE_RATE
        assert isinstance(end, AudioStreamEnd)
        assert all(isinstance(c, AudioChunk) for c in chunks)
        assert [c.seq for c in chunks if isinstance(c, AudioChunk)] == list(range(len(chunks)))
        assert end.total_chunks == len(chunks)
        assert {e.request_id for e in events} == {"sse-1"}
        pcm = b"".join(b64decode(c.data) for c in chunks if isinstance(c, AudioChunk))
        assert pcm == reference
        assert end.duration_s == pytest.approx(len(pcm) / 48_000, abs=1e-3)


def test_invocation_errors_are_json_with_a_status(tts_server: Any) -> None:
    cases: list[tuple[dict[str, Any] | bytes, int, str]] = [
        (b"{broken", 400, "invalid_json"),
        ({"voice": "jf_alpha"}, 400, "invalid_field"),
        ({"text": TEXT, "voice": "zz_nobody"}, 400, "unknown_voice"),
        ({"text": TEXT, "speed": 9}, 400, "invalid_field"),
        ({"text": TEXT, "format": "wma"}, 400, "invalid_field"),
        ({"text": TEXT, "request_id": ""}, 400, "invalid_field"),  # the WebSocket's request-id rule
        ({"text": "x" * (limits.MAX_TEXT_CHARS + 1)}, 413, "limit_exceeded"),  # one status per code
        ({"text": TEXT, "request_id": "r" * (limits.MAX_REQUEST_ID_CHARS + 1)}, 413, "limit_exceeded"),
        (json.dumps({"text": "x" * limits.MAX_MESSAGE_BYTES}).encode(), 413, "limit_exceeded"),
    ]
    with client(tts_server) as http:
        for body, status, code in cases:
            if isinstance(body, bytes):
                reply = http.post("/invocations", content=body, headers={"content-type": "application/json"})
            else:
                reply = http.post("/invocations", json=body)
            assert reply.status_code == status, (body if isinstance(body, dict) else body[:40], reply.text)
            error = reply.json()["error"]
            assert error["code"] == code
            assert error["message"]
            assert "frame" not in error["message"]  # HTTP callers send request bodies


def test_unknown_paths_and_methods_answer_json(tts_server: Any) -> None:
    with client(tts_server) as http:
        missing = http.get("/no/such/path")
        wrong_method = http.get("/invocations")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"
    assert "/invocations" in missing.json()["error"]["message"]
    assert wrong_method.status_code == 405
    assert wrong_method.json()["error"]["code"] == "method_not_allowed"
    assert wrong_method.headers["allow"] == "POST"


def test_openai_speech_and_voices(tts_server: Any) -> None:
    with client(tts_server) as http:
        voices = http.get("/v1/audio/voices").json()
        speech = http.post("/v1/audio/speech", json={"model": "tts-1", "input": "Yes.", "voice": "jm_kumo"})
        wav = http.post(
            "/v1/audio/speech", json={"model": "kokoro", "input": "Yes.", "response_format": "wav", "speed": 1.5}
        )
        bad_voice = http.post("/v1/audio/speech", json={"model": "tts-1", "input": "Yes.", "voice": "zz_nobody"})
        bad_format = http.post("/v1/audio/speech", json={"input": "Yes.", "response_format": "wma"})
    assert "jf_alpha" in voices["voices"]
    assert voices["default"] in voices["voices"]
    assert speech.status_code == 200
    assert speech.headers["content-type"] == "audio/mpeg"  # OpenAI's default format
    assert decode_audio(speech.content)[1] > 0
    assert wav.status_code == 200
    assert wav.content[:4] == b"RIFF"
    assert bad_voice.status_code == 400
    assert bad_voice.json()["error"]["code"] == "unknown_voice"
    assert "jf_alpha" in bad_voice.json()["error"]["message"]
    assert bad_format.status_code == 400
    assert "response_format" in bad_format.json()["error"]["message"]


def test_voice_blend_is_accepted(tts_server: Any) -> None:
    with client(tts_server) as http:
        reply = http.post("/invocations", json={"text": "Yes.", "voice": "jf_alpha:0.5,jm_kumo:0.5", "format": "pcm"})
    assert reply.status_code == 200
    samples = np.frombuffer(reply.content, dtype="<i2")
    assert samples.size > 0
    assert np.abs(samples).max() > 1000  # real speech, not silence
