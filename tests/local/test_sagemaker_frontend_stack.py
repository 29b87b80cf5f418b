"""The local voice stack with ``tts_transport="sagemaker"``: the agent speaks through the local SageMaker front
end (real SDK, awscrt, TLS trusted per client, SigV4 checked), not through a plain WebSocket."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import httpx
import pytest

from relay_cli.agent_client import TurnResult, collect_turn
from relay_core.agent.events import AgentEnd, AgentPayload
from relay_local.sagemaker_frontend import ENDPOINT_URL_ENV
from relay_local.stack import VoiceStack

pytestmark = pytest.mark.slow


def test_stack_runs_the_agent_through_the_sagemaker_front_end(tts_server: Any) -> None:
    before = {name: os.environ.get(name) for name in ("SSL_CERT_FILE", ENDPOINT_URL_ENV)}
    with VoiceStack(tts_url=tts_server.ws_url, tts_transport="sagemaker") as stack:
        assert stack.sagemaker_endpoint_url is not None and stack.sagemaker_endpoint_url.startswith("https://")

        async def go() -> TurnResult:
            async with httpx.AsyncClient(timeout=120) as client:
                return await collect_turn(client, stack.agent_url, AgentPayload(prompt="Through SageMaker."))

        result = asyncio.run(go())
        assert isinstance(result.terminal, AgentEnd) and result.terminal.status == "completed"
        assert result.text == "Through SageMaker." and len(result.pcm) > 0
        assert stack._frontend is not None and stack._frontend.streams_served == 1
    # The CA is trusted per client: the process environment is untouched.
    assert {name: os.environ.get(name) for name in before} == before
    assert stack.sagemaker_endpoint_url is None


def test_unknown_transport_is_refused() -> None:
    with pytest.raises(ValueError, match="ws, sagemaker"):
        VoiceStack(tts_transport="grpc")
