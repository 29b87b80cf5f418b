"""The agent's end-to-end cases on the ``sagemaker`` transport: the real SDK (0.12, awscrt, TLS + HTTP/2) through
the local SageMaker front end to the real TTS container (real int8 model).

``test_agent_e2e.py`` runs its cases on the ``ws`` transport. This module runs *the same case functions* (loaded
from that file, every ``test_*`` in it, so a case added there runs here too) with a ``make_agent`` fixture whose
transport is :class:`~relay_transport.sagemaker.SageMakerTransport`, configured only through the environment
a deployed agent would have (``AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2``, ``SSL_CERT_FILE``, credentials,
region). The front end checks every SigV4 signature. Then the cases only this transport has: how SageMaker's
refusals and stream errors reach the agent's turn.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
import websockets

from relay_cli.agent_client import TurnResult, collect_turn
from relay_core.agent.events import AgentEnd, AgentFailed, AgentPayload, AudioChunk
from relay_local.sagemaker_frontend import SageMakerFrontEnd
from relay_local.servers import BackgroundServer
from relay_transport.errors import TtsStreamError, TtsUnavailableError
from relay_transport.sagemaker import SageMakerTransport
from voice_agent.app import create_app
from voice_agent.config import AgentConfig

pytestmark = pytest.mark.slow

_E2E_PATH = Path(__file__).with_name("test_agent_e2e.py")


def _load_e2e() -> Any:
    spec = importlib.util.spec_from_file_location("agent_e2e_cases", _E2E_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file executes
    spec.loader.exec_module(module)
    return module


e2e = _load_e2e()
CASES = {name: case for name, case in vars(e2e).items() if name.startswith("test_") and callable(case)}
globals().update({f"{name}_sagemaker": case for name, case in CASES.items()})


def test_every_ws_case_also_runs_on_sagemaker() -> None:
    assert len(CASES) >= 8
    assert all(f"{name}_sagemaker" in globals() for name in CASES)


@pytest.fixture
def make_agent(
    sagemaker_env: SageMakerFrontEnd, sagemaker_tls_dir: Path, tts_server: Any, bedrock_env: Any
) -> Iterator[Any]:
    """``make_agent(rate=, drops=, url=, lang=)`` as in test_agent_e2e, on the sagemaker transport. ``url`` (a
    container WebSocket URL) gets its own front end, so a refused container is refused the way SageMaker refuses it."""
    servers: list[BackgroundServer] = []
    fronts: list[SageMakerFrontEnd] = []

    def start(
        *, rate: float = 400.0, drops: list[int | None] | None = None, url: str | None = None, lang: str | None = None
    ) -> Any:
        endpoint_url = sagemaker_env.endpoint_url
        if url is not None:
            front = SageMakerFrontEnd(url, endpoint_name="kokoro-tts", tls_dir=sagemaker_tls_dir).start()
            fronts.append(front)
            endpoint_url = front.endpoint_url
        sagemaker = SageMakerTransport("kokoro-tts", endpoint_uri=endpoint_url, session=boto3.Session())
        transport = e2e.RecordingTransport(sagemaker, drops=drops or [])
        config = AgentConfig(tts_url=tts_server.ws_url, speak_tokens_per_s=rate, lang=lang)
        server = BackgroundServer(create_app(config, transport=transport), name="agent").start()
        servers.append(server)
        return e2e.AgentUnderTest(url=server.http_url, transport=transport)

    yield start
    for server in servers:
        server.stop()
    for front in fronts:
        front.stop()


# --- what only the sagemaker transport has: SageMaker's refusals and stream errors -------------------------


def test_unknown_endpoint_is_unavailable_naming_what_to_check(sagemaker_env: SageMakerFrontEnd) -> None:
    async def go() -> None:
        await SageMakerTransport("no-such-endpoint", session=boto3.Session()).connect()

    with pytest.raises(TtsUnavailableError) as failure:
        asyncio.run(go())
    message = str(failure.value)
    assert "InputValidationError" in message and "no-such-endpoint" in message and "not found" in message
    assert "InService" in message


def test_wrong_secret_is_refused_by_the_signature_check(
    sagemaker_env: SageMakerFrontEnd, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-front-ends-secret")

    async def go() -> None:
        await SageMakerTransport("kokoro-tts", session=boto3.Session()).connect()

    with pytest.raises(TtsUnavailableError, match="InvalidSignatureException"):
        asyncio.run(go())


def test_wrong_region_is_refused(sagemaker_env: SageMakerFrontEnd) -> None:
    async def go() -> None:
        await SageMakerTransport("kokoro-tts", "eu-west-3", session=boto3.Session()).connect()

    with pytest.raises(TtsUnavailableError, match="region"):
        asyncio.run(go())


async def _abort_after_first_message(websocket: Any) -> None:
    await websocket.recv()
    await websocket.send(json.dumps({"type": "synthesis_start", "request_id": "r1"}))
    await websocket.close(1011, "engine crashed")


def test_container_abnormal_close_is_a_model_stream_error(
    sagemaker_env: SageMakerFrontEnd, sagemaker_tls_dir: Path
) -> None:
    async def go() -> tuple[str | bytes, TtsStreamError]:
        async with websockets.serve(_abort_after_first_message, "127.0.0.1", 0) as container:
            port = container.sockets[0].getsockname()[1]
            front = await asyncio.to_thread(
                SageMakerFrontEnd(f"ws://127.0.0.1:{port}/", tls_dir=sagemaker_tls_dir).start
            )
            try:
                transport = SageMakerTransport("kokoro-tts", endpoint_uri=front.endpoint_url, session=boto3.Session())
                connection = await transport.connect()
                await connection.send(json.dumps({"type": "synthesize", "text": "Hi.", "request_id": "r1"}))
                first = await connection.receive()
                with pytest.raises(TtsStreamError) as failure:
                    await connection.receive()
                await connection.aclose()
                return first, failure.value
            finally:
                await asyncio.to_thread(front.stop)

    first, error = asyncio.run(go())
    assert json.loads(first)["type"] == "synthesis_start"
    assert error.code == "ModelError"
    assert "1011" in error.detail and "engine crashed" in error.detail


def test_turn_through_a_dead_container_ends_tts_unavailable_after_the_text(make_agent: Any) -> None:
    agent = make_agent(url="ws://127.0.0.1:9/invocations-bidirectional-stream")
    events, _ = e2e._run(agent.url, AgentPayload(prompt="One. Two."))
    end = events[-1]
    assert isinstance(end, AgentFailed) and end.code == "tts_unavailable"
    assert "ModelError" in end.message and "Traceback" not in end.message
    assert not any(isinstance(event, AudioChunk) for event in events)


def test_concurrent_turns_each_get_their_own_stream(make_agent: Any, sagemaker_env: SageMakerFrontEnd) -> None:
    agent = make_agent()
    before = sagemaker_env.streams_served

    async def go() -> list[TurnResult]:
        async with httpx.AsyncClient(timeout=120) as client:
            turns = [collect_turn(client, agent.url, AgentPayload(prompt=f"Turn {i} speaks.")) for i in range(3)]
            return list(await asyncio.gather(*turns))

    results = asyncio.run(go())
    assert [r.text for r in results] == [f"Turn {i} speaks." for i in range(3)]
    assert all(len(r.pcm) > 0 for r in results)
    assert sagemaker_env.streams_served - before == 3
    assert all(isinstance(r.terminal, AgentEnd) for r in results)


def test_sessions_reuse_one_connection_and_survive_its_loss(
    sagemaker_env: SageMakerFrontEnd, sagemaker_tls_dir: Path, tts_server: Any
) -> None:
    def front_end(port: int = 0) -> SageMakerFrontEnd:
        return SageMakerFrontEnd(tts_server.ws_url, endpoint_name="kokoro-tts", tls_dir=sagemaker_tls_dir).start(
            port=port
        )

    async def one_round_trip(transport: SageMakerTransport) -> str:
        connection = await transport.connect()
        try:
            await connection.send(json.dumps({"type": "cancel", "request_id": "nothing-running"}))
            frame = await connection.receive()
            assert isinstance(frame, str)
            return str(json.loads(frame)["type"])
        finally:
            await connection.aclose()

    first = front_end()
    second: SageMakerFrontEnd | None = None
    try:
        transport = SageMakerTransport("kokoro-tts", endpoint_uri=first.endpoint_url, session=boto3.Session())

        async def go() -> tuple[list[str], list[str]]:
            nonlocal second
            before = [await one_round_trip(transport) for _ in range(3)]
            # The kept connection goes away (the peer restarts on the same port): the next session still opens.
            await asyncio.to_thread(first.stop)
            second = await asyncio.to_thread(front_end, first.port)
            after = [await one_round_trip(transport) for _ in range(2)]
            await transport.aclose()
            return before, after

        before, after = asyncio.run(go())
    finally:
        first.stop()
        if second is not None:
            second.stop()
    assert before == after[:1] * 3 and after == ["error", "error"]
    assert first.connections_accepted == 1
    assert second is not None and second.connections_accepted == 1
