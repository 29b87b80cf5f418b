"""The agent stays compatible with a TTS container from before the admission queue, which closed a session past
its limit with 1013 (try again later) instead of queueing it: the link backs off and retries for its own wait, then
ends the speech ``tts_at_capacity``, never ``tts_failed`` and never spending its one reconnect.

The old container is played by a real WebSocket server on loopback that refuses every session the way it did."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from websockets.asyncio.server import ServerConnection, serve

from relay_core.agent.events import AgentErrorCode
from relay_core.close_codes import TRY_AGAIN_LATER
from relay_core.speech_options import SpeechOptions
from relay_transport.ws import WsTransport
from voice_agent.tts_link import TtsLink, TtsLinkError

HANG_S = 60.0
"""A deadline that only catches a hang."""


@asynccontextmanager
async def refusing_container() -> AsyncIterator[tuple[str, list[int]]]:
    """A server that accepts each session and closes it at once with 1013, as the container did when full."""
    refused: list[int] = []

    async def refuse(websocket: ServerConnection) -> None:
        refused.append(1)
        await websocket.close(TRY_AGAIN_LATER, "server busy: 4 sessions in use; retry later or on another instance")

    async with serve(refuse, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        yield f"ws://127.0.0.1:{port}/invocations-bidirectional-stream", refused


def test_an_older_container_that_refuses_with_1013_makes_the_turn_wait_then_end_tts_at_capacity() -> None:
    async def scenario() -> None:
        async with refusing_container() as (url, refused):
            link = TtsLink(
                WsTransport(url),
                request_prefix="t",
                options=SpeechOptions(),
                capacity_wait_s=0.3,
                backoff_s=(0.01, 0.05),
            )
            await link.open()
            await link.speak("Hello there.")
            await link.finish()
            with pytest.raises(TtsLinkError) as failure:
                async for _ in link.events():
                    pass
            await link.aclose()
            assert failure.value.code == AgentErrorCode.TTS_AT_CAPACITY
            assert "speech is at capacity" in failure.value.message
            assert link.capacity_refusals >= 2 and len(refused) == link.sessions_opened  # it retried, in vain

    asyncio.run(asyncio.wait_for(scenario(), HANG_S))
