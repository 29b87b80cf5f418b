"""A client of the agent's ``/invocations`` (§3): stream a turn's events, cancel a turn, collect a reply.

The SSE body is decoded with :class:`relay_core.sse.SseDecoder`, so any re-chunking of the body (AgentCore and
SageMaker re-chunk) yields the same events.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import httpx

from relay_core.agent.events import (
    AGENTCORE_SESSION_HEADER,
    AgentCancel,
    AgentEnd,
    AgentEvent,
    AgentFailed,
    AgentPayload,
    AudioChunk,
    TextDelta,
    parse_event,
)
from relay_core.audio import b64decode
from relay_core.sse import SseDecoder

SESSION_HEADER = AGENTCORE_SESSION_HEADER
"""AgentCore's session header: invocations carrying the same value share one conversation."""


def decode_sse_events(chunks: list[bytes]) -> list[AgentEvent]:
    """Every agent event in an SSE body given as arbitrary chunks."""
    decoder = SseDecoder()
    events = [parse_event(e.data) for chunk in chunks for e in decoder.feed(chunk)]
    return events + [parse_event(e.data) for e in decoder.close()]


async def stream_turn(
    client: httpx.AsyncClient,
    agent_url: str,
    payload: AgentPayload,
    *,
    session_id: str | None = None,
    on_chunk: Callable[[bytes], None] | None = None,
) -> AsyncIterator[AgentEvent]:
    """The events of one turn, as they arrive. ``on_chunk`` sees every raw body chunk (tests use it)."""
    headers = {"Accept": "text/event-stream"}
    if session_id is not None:
        headers[SESSION_HEADER] = session_id
    decoder = SseDecoder()
    async with client.stream(
        "POST", f"{agent_url}/invocations", json=payload.to_json(), headers=headers, timeout=None
    ) as response:
        if response.status_code != 200:
            body = (await response.aread()).decode("utf-8", errors="replace")[:500]
            raise httpx.HTTPStatusError(
                f"the agent answered HTTP {response.status_code}: {body}", request=response.request, response=response
            )
        async for chunk in response.aiter_bytes():
            if on_chunk is not None:
                on_chunk(chunk)
            for event in decoder.feed(chunk):
                yield parse_event(event.data)
        for event in decoder.close():
            yield parse_event(event.data)


async def cancel_turn(
    client: httpx.AsyncClient, agent_url: str, *, session_id: str | None, request_id: str | None = None
) -> list[str]:
    """Ask the agent to cancel a running turn; the ids of the turns it cancelled."""
    body = AgentCancel(request_id=request_id).to_json()
    headers = {} if session_id is None else {SESSION_HEADER: session_id}
    response = await client.post(f"{agent_url}/invocations", json=body, headers=headers)
    response.raise_for_status()
    cancelled = response.json().get("cancelled", [])
    return [str(x) for x in cancelled]


@dataclass
class TurnResult:
    """A finished turn as the client saw it."""

    events: list[AgentEvent] = field(default_factory=list)
    text: str = ""
    pcm: bytes = b""
    time_to_first_audio_s: float | None = None
    """From sending the request to the first ``audio_chunk`` (client clock)."""
    time_to_first_text_s: float | None = None
    elapsed_s: float = 0.0

    @property
    def terminal(self) -> AgentEvent | None:
        return self.events[-1] if self.events and isinstance(self.events[-1], AgentEnd | AgentFailed) else None


async def collect_turn(
    client: httpx.AsyncClient,
    agent_url: str,
    payload: AgentPayload,
    *,
    session_id: str | None = None,
    on_event: Callable[[AgentEvent], None] | None = None,
) -> TurnResult:
    """Run one turn to its end, gathering text, PCM and timings."""
    result = TurnResult()
    started = time.perf_counter()
    pcm = bytearray()
    text: list[str] = []
    async for event in stream_turn(client, agent_url, payload, session_id=session_id):
        now = time.perf_counter() - started
        result.events.append(event)
        if isinstance(event, TextDelta):
            text.append(event.text)
            if result.time_to_first_text_s is None:
                result.time_to_first_text_s = now
        elif isinstance(event, AudioChunk):
            pcm.extend(b64decode(event.data))
            if result.time_to_first_audio_s is None:
                result.time_to_first_audio_s = now
        if on_event is not None:
            on_event(event)
    result.elapsed_s = time.perf_counter() - started
    result.text = "".join(text)
    result.pcm = bytes(pcm)
    return result


__all__ = [
    "SESSION_HEADER",
    "TurnResult",
    "cancel_turn",
    "collect_turn",
    "decode_sse_events",
    "stream_turn",
]
