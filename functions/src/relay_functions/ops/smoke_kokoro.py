"""The Kokoro checks of the smoke test, and the Lambda task ``relay_functions.ops.smoke_kokoro.handler``.

Bidirectional check (what a health check cannot see): ONE session; two ``synthesize`` requests sent as BINARY
frames (as SageMaker delivers them), the second only after the first completed (so the session demonstrably stays
open); for each, ``synthesis_start`` -> at least one PCM frame -> ``synthesis_complete`` with the request's id and
plausible, non-silent speech; then ``close`` and a clean close. HTTP check: ``POST /invocations`` streaming WAV,
reassembled across transport chunks. Time to first audio is measured for both.

Transports (:mod:`relay_functions.ops.smoke_transport`: a session and POST /invocations); locally a
plain WebSocket and urllib (:mod:`relay_functions.ops.smoke_local`), in AWS the SageMaker bidirectional SDK (the
voice agent's transport) and ``invoke_endpoint_with_response_stream`` (:mod:`relay_functions.ops.smoke_aws`).
"""

from __future__ import annotations

import asyncio
import json
import os
import struct
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any, Final

from relay_core import limits
from relay_core.audio import WAV_HEADER_BYTES
from relay_core.errors import ProtocolError
from relay_core.tts.client import AudioReceived, FrameRefused, RequestEnded, RequestStarted, TtsClientSession
from relay_core.tts.messages import SynthesisComplete, Synthesize
from relay_functions.ops.errors import SmokeCheckError
from relay_functions.ops.smoke_audio import check_speech
from relay_functions.ops.smoke_transport import InvocationStream, SessionClosedError, SessionConnection

SMOKE_TEXTS: Final = (
    "Hello from the Kokoro Relay smoke test.",
    "This second request runs on the same session.",
)
STEP_TIMEOUT_S: Final = 60.0


@dataclass(frozen=True, slots=True)
class RequestFigures:
    request_id: str
    first_audio_ms: float
    elapsed_ms: float
    audio_s: float
    pcm_frames: int


@dataclass(frozen=True, slots=True)
class KokoroFigures:
    requests: tuple[RequestFigures, ...]
    http_first_audio_ms: float
    http_audio_s: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


async def _next_frame(connection: SessionConnection, what: str) -> str | bytes:
    try:
        return await asyncio.wait_for(connection.receive(), STEP_TIMEOUT_S)
    except TimeoutError as exc:
        raise SmokeCheckError(f"{what}: nothing arrived within {STEP_TIMEOUT_S:.0f} s") from exc
    except SessionClosedError as exc:
        raise SmokeCheckError(f"{what}: the session closed early ({exc})") from exc


async def _one_request(
    connection: SessionConnection, session: TtsClientSession, text: str, request_id: str
) -> RequestFigures:
    what = f"synthesize {request_id}"
    frame = session.synthesize(Synthesize(text=text, request_id=request_id))
    started = time.perf_counter()
    await connection.send_binary(frame.encode("utf-8"))
    seen_start = False
    pcm = bytearray()
    frames = 0
    first_audio: float | None = None
    while True:
        data = await _next_frame(connection, what)
        try:
            events = session.receive_frame(data)
        except ProtocolError as exc:
            raise SmokeCheckError(f"{what}: the server broke the session protocol: {exc.message}") from exc
        for event in events:
            if isinstance(event, RequestStarted):
                if event.message.request_id != request_id:
                    raise SmokeCheckError(f"{what}: synthesis_start named {event.message.request_id!r}")
                seen_start = True
            elif isinstance(event, AudioReceived):
                if not seen_start:
                    raise SmokeCheckError(f"{what}: PCM arrived before synthesis_start")
                frames += 1
                pcm.extend(event.pcm)
                if first_audio is None:
                    first_audio = time.perf_counter() - started
            elif isinstance(event, FrameRefused):
                raise SmokeCheckError(f"{what}: the server reported {event.error.code}: {event.error.message}")
            elif isinstance(event, RequestEnded):
                if event.request_id != request_id:
                    raise SmokeCheckError(f"{what}: a reply ended for {event.request_id!r} instead")
                if not isinstance(event.outcome, SynthesisComplete):
                    raise SmokeCheckError(f"{what}: ended with {event.outcome.type} instead of synthesis_complete")
                if frames == 0 or first_audio is None:
                    raise SmokeCheckError(f"{what}: synthesis_complete with no PCM frame before it")
                audio = check_speech(bytes(pcm), text, what=what)
                return RequestFigures(
                    request_id=request_id,
                    first_audio_ms=round(first_audio * 1000, 1),
                    elapsed_ms=round((time.perf_counter() - started) * 1000, 1),
                    audio_s=audio.duration_s,
                    pcm_frames=frames,
                )


async def check_session(connect: Callable[[], Awaitable[SessionConnection]]) -> tuple[RequestFigures, ...]:
    """The bidirectional check on one session opened by ``connect``."""
    try:
        connection = await connect()
    except SmokeCheckError:
        raise
    except Exception as exc:
        raise SmokeCheckError(f"open a TTS session: {type(exc).__name__}: {exc}") from exc
    session = TtsClientSession()
    try:
        figures = []
        for i, text in enumerate(SMOKE_TEXTS):
            figures.append(await _one_request(connection, session, text, f"smoke-{i + 1}"))
        await connection.send_binary(session.close().encode("utf-8"))
        try:
            extra = await asyncio.wait_for(connection.receive(), STEP_TIMEOUT_S)
        except SessionClosedError as exc:
            if not exc.clean:
                raise SmokeCheckError(f"close: the session did not close cleanly ({exc})") from exc
        except TimeoutError as exc:
            raise SmokeCheckError(f"close: the session was still open {STEP_TIMEOUT_S:.0f} s after close") from exc
        else:
            raise SmokeCheckError(f"close: expected a clean close, got another frame ({str(extra)[:80]!r})")
        return tuple(figures)
    finally:
        await connection.aclose()


def check_invocations(post: InvocationStream) -> tuple[float, float]:
    """(time to first audio in ms, audio seconds) of a streamed ``POST /invocations`` WAV."""
    text = SMOKE_TEXTS[0]
    body = json.dumps({"text": text, "stream": True, "format": "wav"}).encode()
    started = time.perf_counter()
    data = bytearray()
    first_audio: float | None = None
    try:
        for chunk in post(body):
            data.extend(chunk)
            if first_audio is None and len(data) > WAV_HEADER_BYTES:
                first_audio = time.perf_counter() - started
    except SmokeCheckError:
        raise
    except Exception as exc:
        raise SmokeCheckError(f"POST /invocations: {type(exc).__name__}: {exc}") from exc
    if len(data) < WAV_HEADER_BYTES or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise SmokeCheckError(f"POST /invocations: the answer is not a WAV stream (first bytes {bytes(data[:12])!r})")
    channels, rate, bits = struct.unpack_from("<H", data, 22)[0], struct.unpack_from("<I", data, 24)[0], data[34]
    if (channels, rate, bits) != (limits.CHANNELS, limits.SAMPLE_RATE, 16):
        raise SmokeCheckError(
            f"POST /invocations: WAV is {channels} ch, {rate} Hz, {bits} bit; expected mono 24 kHz 16 bit"
        )
    audio = check_speech(bytes(data[WAV_HEADER_BYTES:]), text, what="POST /invocations")
    assert first_audio is not None
    return round(first_audio * 1000, 1), audio.duration_s


async def run_kokoro_checks(
    connect: Callable[[], Awaitable[SessionConnection]], post: InvocationStream
) -> KokoroFigures:
    requests = await check_session(connect)
    http_ttfa, http_audio = await asyncio.to_thread(check_invocations, post)
    return KokoroFigures(requests=requests, http_first_audio_ms=http_ttfa, http_audio_s=http_audio)


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    """Runs the Kokoro checks against ``ENDPOINT_NAME`` (SageMaker) and returns the figures; with ``SMOKE_TTS_URL``
    (``ws://host:port/invocations-bidirectional-stream``, local stack and tests) against that container instead."""
    local_url = os.environ.get("SMOKE_TTS_URL")
    if local_url:
        from relay_functions.ops.smoke_local import http_invocations, ws_session  # noqa: PLC0415

        base = local_url.replace("ws://", "http://", 1).replace("wss://", "https://", 1).split("/invocations")[0]
        return {
            "check": "kokoro",
            **asyncio.run(run_kokoro_checks(ws_session(local_url), http_invocations(base))).to_json(),
        }
    from relay_functions.ops.smoke_aws import sagemaker_invocations, sagemaker_session  # noqa: PLC0415 - AWS only

    endpoint = os.environ.get("ENDPOINT_NAME", "")
    if not endpoint:
        raise SmokeCheckError("ENDPOINT_NAME is not set: the function does not know which endpoint to check")
    figures = asyncio.run(run_kokoro_checks(sagemaker_session(endpoint), sagemaker_invocations(endpoint)))
    return {"check": "kokoro", **figures.to_json()}


__all__ = [
    "SMOKE_TEXTS",
    "KokoroFigures",
    "RequestFigures",
    "check_invocations",
    "check_session",
    "handler",
    "run_kokoro_checks",
]
