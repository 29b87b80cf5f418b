"""The naive peer of every first-sound figure: one whole request at a time behind one global lock.

The reference sample's policy, on the same engine as ``kokoro-server`` (int8 onnx, every core per inference):
a TTS session of ARCHITECTURE §1 (``synthesize`` requests run in order per session) where each request is
synthesized whole (``Engine.synthesize``) while holding one process-wide lock, and its audio is sent in one
binary frame when it is done. No silence trimming, no first fragment, no scheduler. ``GET /ping`` answers 200 once
the model is loaded. Usage: ``python bench/baseline_server.py --port 8090`` (benchlib.run_baseline starts it).
"""

from __future__ import annotations

import argparse
import asyncio
import threading
import time

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from kokoro_server.engines import EngineConfig, load_engine
from kokoro_server.pcm import float_to_pcm16
from relay_core.tts.messages import SESSION_PATH
from relay_core.tts.session import TtsServerSession

ENGINE = load_engine(EngineConfig())
LOCK = threading.Lock()
"""One request at a time, across every session."""


def render_whole(text: str, voice: str, speed: float) -> bytes:
    with LOCK:
        return float_to_pcm16(ENGINE.synthesize(text, voice=voice, speed=speed))


async def ping(_request: Request) -> JSONResponse:
    return JSONResponse({"status": "healthy", "engine": ENGINE.name})


async def session(websocket: WebSocket) -> None:
    await websocket.accept()
    tts = TtsServerSession(default_voice=ENGINE.default_voice, check_voice=ENGINE.check_voice)
    wake = asyncio.Event()
    send_lock = asyncio.Lock()

    async def flush() -> None:
        async with send_lock:
            for frame in tts.data_to_send():
                if isinstance(frame, bytes):
                    await websocket.send_bytes(frame)
                else:
                    await websocket.send_text(frame)
            if tts.should_close:
                await websocket.close(tts.close_code)

    async def synthesis_loop() -> None:
        while True:
            request = tts.next_request()
            if request is None:
                await wake.wait()
                wake.clear()
                continue
            await flush()
            assert request.request_id is not None
            assert request.options.voice is not None
            started = time.perf_counter()
            pcm = await asyncio.to_thread(render_whole, request.text, request.options.voice, request.options.speed)
            elapsed = time.perf_counter() - started
            tts.send_audio(request.request_id, pcm)
            tts.finish_request(request.request_id, elapsed_s=elapsed, first_audio_s=elapsed)
            await flush()

    worker = asyncio.create_task(synthesis_loop())
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            data = message.get("bytes") or message.get("text")
            if data:
                tts.receive_frame(data)
                wake.set()
                await flush()
    except WebSocketDisconnect:
        return
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)


app = Starlette(routes=[Route("/ping", ping), WebSocketRoute(SESSION_PATH, session)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    ENGINE.synthesize("Warm up.", voice=ENGINE.default_voice, speed=1.0)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", ws_max_size=2**20)


if __name__ == "__main__":
    main()
