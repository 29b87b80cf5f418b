"""The smoke checks themselves, against TTS servers that misbehave in one way each (a broken server is what these
checks exist to catch), plus the audio criteria and the EMF record. The real model's pass is in
test_smoke_test_workflow.py."""

from __future__ import annotations

import asyncio
import json
import math
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
from websockets.asyncio.server import ServerConnection, serve

from relay_core.speech_options import SpeechOptions
from relay_core.tts.messages import SynthesisComplete, SynthesisStart, TtsFailed, serialize
from relay_functions.ops.emf import emf_document
from relay_functions.ops.errors import SmokeCheckError
from relay_functions.ops.smoke_audio import check_speech
from relay_functions.ops.smoke_kokoro import check_session
from relay_functions.ops.smoke_local import ws_session
from relay_functions.ops.smoke_report import build_report


def tone(seconds: float, amplitude: int = 8000) -> bytes:
    n = int(24_000 * seconds)
    return struct.pack(f"<{n}h", *(int(amplitude * math.sin(i / 8)) for i in range(n)))


Behaviour = Callable[[ServerConnection, dict[str, object]], Awaitable[None]]


async def speak(
    ws: ServerConnection, request: dict[str, object], *, pcm: bytes | None = None, rid: object = None
) -> None:
    request_id = str(rid if rid is not None else request["request_id"])
    audio = pcm if pcm is not None else tone(2.5)
    await ws.send(serialize(SynthesisStart(request_id=request_id, options=SpeechOptions("jf_alpha"))))
    await ws.send(audio)
    await ws.send(
        serialize(SynthesisComplete(request_id, 2.5, 0.1, segments=1, audio_bytes=len(audio), first_audio_s=0.05))
    )


@asynccontextmanager
async def tts_server(behaviour: Behaviour, frames: list[type]) -> AsyncIterator[str]:
    """A loopback TTS session server: records each client frame's type, answers synthesize with ``behaviour``."""

    async def session(ws: ServerConnection) -> None:
        async for message in ws:
            frames.append(type(message))
            request = json.loads(message)
            if request.get("type") == "close":
                await ws.close(1000)
                return
            await behaviour(ws, request)

    async with serve(session, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        yield f"ws://127.0.0.1:{port}/invocations-bidirectional-stream"


def run_check(behaviour: Behaviour) -> tuple[object, list[type]]:
    frames: list[type] = []

    async def main() -> object:
        async with tts_server(behaviour, frames) as url:
            return await check_session(ws_session(url))

    return asyncio.run(main()), frames


def test_a_conforming_session_passes_and_every_frame_was_binary() -> None:
    figures, frames = run_check(lambda ws, request: speak(ws, request))
    assert [f.request_id for f in figures] == ["smoke-1", "smoke-2"]  # type: ignore[attr-defined]
    assert frames == [bytes, bytes, bytes]  # two synthesize requests and close, all binary


@pytest.mark.parametrize(
    ("behaviour", "observed"),
    [
        (lambda ws, r: speak(ws, r, pcm=bytes(48_000)), "is silent"),
        (lambda ws, r: speak(ws, r, pcm=tone(30)), "implausible"),
        (lambda ws, r: speak(ws, r, rid="someone-else"), "synthesis_start named 'someone-else'"),
        (lambda ws, r: ws.close(1011), "the session closed early"),
        (
            lambda ws, r: ws.send(serialize(TtsFailed("synthesis_failed", "m", request_id=str(r["request_id"])))),
            "ended with error instead of synthesis_complete",
        ),
    ],
)
def test_a_misbehaving_server_fails_the_check_saying_what_was_observed(behaviour: Behaviour, observed: str) -> None:
    with pytest.raises(SmokeCheckError, match=observed):
        run_check(behaviour)


def test_speech_criteria() -> None:
    assert check_speech(tone(2.0), "Hello from the smoke test.", what="t").duration_s == 2.0
    with pytest.raises(SmokeCheckError, match="not whole 16-bit samples"):
        check_speech(b"\x00\x01\x02", "Hi.", what="t")
    with pytest.raises(SmokeCheckError, match="no audio"):
        check_speech(b"", "Hi.", what="t")


def test_the_emf_record_declares_each_metric_with_its_unit() -> None:
    doc = emf_document(
        {"AgentFirstAudio": (812.5, "Milliseconds"), "SmokeTestPassed": (1.0, "Count")},
        dimensions={"Workflow": "SmokeTest"},
        timestamp_ms=1,
    )
    [directive] = doc["_aws"]["CloudWatchMetrics"]
    assert directive["Dimensions"] == [["Workflow"]]
    assert {m["Name"]: m["Unit"] for m in directive["Metrics"]} == {
        "AgentFirstAudio": "Milliseconds",
        "SmokeTestPassed": "Count",
    }
    assert doc["AgentFirstAudio"] == 812.5 and doc["Workflow"] == "SmokeTest"


def test_a_failure_report_names_the_step_and_keeps_the_lambda_message() -> None:
    cause = json.dumps({"errorType": "SmokeCheckError", "errorMessage": "agent: the turn lacked audio"})
    report = build_report({"outcome": "failed", "results": {}, "failure": {"step": "AgentCheck", "cause": cause}})
    assert report["error"] == "SmokeTest.AgentCheckFailed"
    assert report["cause"] == "AgentCheck: SmokeCheckError: agent: the turn lacked audio"
    assert report["passed"] is False
