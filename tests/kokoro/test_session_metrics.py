"""Session requests emit CloudWatch EMF lines (the latency metric the dashboard charts for bidi sessions)."""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any

import pytest
from websockets.asyncio.client import connect

from kokoro_server.admission import Admission
from kokoro_server.config import ServerConfig
from kokoro_server.session_metrics import SessionMetrics, publish_sessions
from relay_core.tts.metrics import (
    FIRST_AUDIO,
    NAMESPACE,
    OPEN_SESSIONS,
    QUEUED_SESSIONS,
    REQUEST_DURATION,
    emf_record,
)


def test_an_emf_record_declares_every_value_it_carries() -> None:
    record = emf_record("kokoro-relay-dev-tts", first_audio_s=0.2504, elapsed_s=1.5, audio_s=3.25, now_ms=1)
    declared = record["_aws"]["CloudWatchMetrics"][0]
    assert declared["Namespace"] == NAMESPACE
    assert declared["Dimensions"] == [["EndpointName"]]
    names = {metric["Name"] for metric in declared["Metrics"]}
    assert names == {FIRST_AUDIO, REQUEST_DURATION, "SessionAudioSeconds"}
    assert all(name in record for name in names)  # EMF drops a declared metric whose value is missing
    assert record[FIRST_AUDIO] == 250.4
    assert record["EndpointName"] == "kokoro-relay-dev-tts"
    silent = emf_record("e", first_audio_s=None, elapsed_s=0.1, audio_s=0.0, now_ms=1)
    assert FIRST_AUDIO not in silent
    assert FIRST_AUDIO not in {m["Name"] for m in silent["_aws"]["CloudWatchMetrics"][0]["Metrics"]}


def test_the_open_and_queued_sessions_are_sampled_as_high_resolution_metrics() -> None:
    stream = io.StringIO()

    async def sample() -> None:
        admission = Admission(1)
        admission.join()
        admission.join()
        admission.join()  # one open, two waiting
        publishing = asyncio.create_task(publish_sessions(SessionMetrics("kokoro-relay-dev-tts", stream), admission))
        await asyncio.sleep(0)  # the publisher samples at once, then sleeps its interval
        publishing.cancel()

    asyncio.run(asyncio.wait_for(sample(), 30))
    record = json.loads(stream.getvalue().splitlines()[0])
    assert (record[OPEN_SESSIONS], record[QUEUED_SESSIONS]) == (1, 2)
    declared = record["_aws"]["CloudWatchMetrics"][0]
    assert declared["Namespace"] == NAMESPACE and declared["Dimensions"] == [["EndpointName"]]
    assert {m["Name"]: m["StorageResolution"] for m in declared["Metrics"]} == {OPEN_SESSIONS: 1, QUEUED_SESSIONS: 1}
    assert record["EndpointName"] == "kokoro-relay-dev-tts"


def test_the_setting_comes_from_the_environment() -> None:
    assert ServerConfig.from_env({"KOKORO_METRICS_ENDPOINT": "kokoro-relay-dev-tts"}).metrics_endpoint == (
        "kokoro-relay-dev-tts"
    )
    assert ServerConfig.from_env({}).metrics_endpoint is None


@pytest.mark.slow
def test_each_finished_session_request_writes_one_line_without_text(
    onnx_engine: Any, serve_tts: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = io.StringIO()
    monkeypatch.setattr("kokoro_server.ws_session.SessionMetrics", lambda endpoint: SessionMetrics(endpoint, stream))

    async def speak(url: str) -> None:
        async with connect(url) as ws:
            for rid in ("a", "b"):
                await ws.send(json.dumps({"type": "synthesize", "text": "Secret words here.", "request_id": rid}))
            await ws.send(json.dumps({"type": "close"}))
            async for _ in ws:
                pass

    with serve_tts(onnx_engine, metrics_endpoint="kokoro-relay-dev-tts") as server:
        asyncio.run(speak(server.ws_url))
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    for line in lines:
        record = json.loads(line)
        assert record["EndpointName"] == "kokoro-relay-dev-tts"
        assert 0 < record[FIRST_AUDIO] <= record[REQUEST_DURATION]
        assert record["SessionAudioSeconds"] > 0.5
    assert "Secret" not in stream.getvalue()
