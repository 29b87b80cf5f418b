"""The agent check of the smoke test, and the Lambda task ``relay_functions.ops.smoke_agent.handler``.

One short turn through the agent runtime (``invoke_agent_runtime``; locally the same boto3 call reaches the local
data plane through ``AWS_ENDPOINT_URL_BEDROCK_AGENTCORE``), read as SSE whatever the chunking, and held to the §3
event order: ``agent_start``; ``text_delta``s; ``audio_stream_start`` before the first ``audio_chunk``; chunks
numbered 0, 1, 2, ...; ``audio_stream_end`` counting them; finally ``agent_end`` (completed). Every event carries
the turn's ``request_id``; the audio must be plausible speech for the reply's text.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any, Final

import boto3

from relay_core.agent.events import (
    AGENTCORE_SESSION_HEADER,
    AgentEnd,
    AgentEvent,
    AgentFailed,
    AgentPayload,
    AgentStart,
    AudioChunk,
    AudioStreamEnd,
    AudioStreamStart,
    TextDelta,
    TurnStatus,
    parse_event,
)
from relay_core.audio import b64decode
from relay_core.errors import RelayError
from relay_core.sse import SseDecoder
from relay_functions.ops.errors import SmokeCheckError
from relay_functions.ops.smoke_audio import check_speech

SMOKE_PROMPT: Final = "Say hello. Then say that the smoke test can hear you."
AgentStream = Callable[[bytes, str], Iterator[bytes]]
"""(payload JSON, session id) -> the SSE body of the turn, in transport chunks."""


@dataclass(frozen=True, slots=True)
class AgentFigures:
    first_text_ms: float
    first_audio_ms: float
    elapsed_ms: float
    audio_s: float
    text_chars: int
    events: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def agentcore_stream(runtime_arn: str, qualifier: str = "DEFAULT") -> AgentStream:
    """``invoke_agent_runtime`` through boto3 (AgentCore, or the local data plane via its endpoint variable)."""

    def invoke(body: bytes, session_id: str) -> Iterator[bytes]:
        answer = boto3.client("bedrock-agentcore").invoke_agent_runtime(
            agentRuntimeArn=runtime_arn,
            qualifier=qualifier,
            runtimeSessionId=session_id,
            payload=body,
            contentType="application/json",
            accept="text/event-stream",
        )
        yield from answer["response"].iter_chunks()

    return invoke


def http_agent_stream(agent_url: str) -> AgentStream:
    """The agent app's ``/invocations`` reached directly (``http://host:port``; no data plane in between)."""

    def invoke(body: bytes, session_id: str) -> Iterator[bytes]:
        request = urllib.request.Request(  # noqa: S310 - the operator's own agent URL
            f"{agent_url}/invocations",
            data=body,
            headers={
                "Content-Type": "application/json",
                "Accept": "text/event-stream",
                AGENTCORE_SESSION_HEADER: session_id,
            },
        )
        with urllib.request.urlopen(request, timeout=120) as response:  # noqa: S310
            while chunk := response.read1(8192):
                yield chunk

    return invoke


def _events(stream: AgentStream, body: bytes, session_id: str, started: float) -> Iterator[tuple[float, AgentEvent]]:
    decoder = SseDecoder()
    for chunk in stream(body, session_id):
        for sse in decoder.feed(chunk):
            yield time.perf_counter() - started, parse_event(sse.data)
    for sse in decoder.close():
        yield time.perf_counter() - started, parse_event(sse.data)


def check_agent(stream: AgentStream, prompt: str = SMOKE_PROMPT) -> AgentFigures:
    """Run one turn and hold it to the §3 sequence; :class:`SmokeCheckError` says what broke it."""
    session_id = f"smoke-test-{uuid.uuid4().hex}"
    body = json.dumps(AgentPayload(prompt=prompt).to_json()).encode()
    started = time.perf_counter()
    events: list[AgentEvent] = []
    text: list[str] = []
    pcm = bytearray()
    first_text = first_audio = None
    audio_started = audio_ended = False
    try:
        for at, event in _events(stream, body, session_id, started):
            if not events and not isinstance(event, AgentStart):
                raise SmokeCheckError(f"agent: the turn began with {event.type}, not agent_start")
            if events and event.request_id != events[0].request_id:
                raise SmokeCheckError(
                    f"agent: {event.type} names request {event.request_id!r}, not {events[0].request_id!r}"
                )
            if events and isinstance(events[-1], AgentEnd | AgentFailed):
                raise SmokeCheckError(f"agent: {event.type} arrived after the terminal event")
            events.append(event)
            if isinstance(event, TextDelta):
                text.append(event.text)
                first_text = at if first_text is None else first_text
            elif isinstance(event, AudioStreamStart):
                audio_started = True
            elif isinstance(event, AudioChunk):
                if not audio_started or audio_ended:
                    raise SmokeCheckError("agent: audio_chunk outside audio_stream_start ... audio_stream_end")
                chunks = sum(isinstance(e, AudioChunk) for e in events)
                if event.seq != chunks - 1:
                    raise SmokeCheckError(f"agent: audio_chunk seq {event.seq} where {chunks - 1} was due")
                pcm.extend(b64decode(event.data))
                first_audio = at if first_audio is None else first_audio
            elif isinstance(event, AudioStreamEnd):
                audio_ended = True
                chunks = sum(isinstance(e, AudioChunk) for e in events)
                if event.total_chunks != chunks:
                    raise SmokeCheckError(f"agent: audio_stream_end counts {event.total_chunks} chunks; {chunks} came")
            elif isinstance(event, AgentFailed):
                raise SmokeCheckError(f"agent: the turn failed with {event.code}: {event.message}")
    except RelayError as exc:
        raise SmokeCheckError(f"agent: the stream is not valid §3 SSE: {exc.message}") from exc
    except SmokeCheckError:
        raise
    except Exception as exc:
        raise SmokeCheckError(f"agent: invoking the runtime failed: {type(exc).__name__}: {exc}") from exc
    terminal = events[-1] if events else None
    if not isinstance(terminal, AgentEnd):
        raise SmokeCheckError(f"agent: the stream ended without agent_end after {len(events)} events")
    if terminal.status != TurnStatus.COMPLETED.value:
        raise SmokeCheckError(f"agent: agent_end status {terminal.status!r}, not completed")
    if first_text is None or first_audio is None or not audio_ended:
        raise SmokeCheckError("agent: the turn lacked text, audio or audio_stream_end")
    reply = "".join(text)
    audio = check_speech(bytes(pcm), reply, what="agent reply")
    return AgentFigures(
        first_text_ms=round(first_text * 1000, 1),
        first_audio_ms=round(first_audio * 1000, 1),
        elapsed_ms=round((time.perf_counter() - started) * 1000, 1),
        audio_s=audio.duration_s,
        text_chars=len(reply),
        events=len(events),
    )


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    """Runs the agent check against ``AGENT_RUNTIME_ARN`` (qualifier ``AGENT_RUNTIME_QUALIFIER``, default DEFAULT)."""
    arn = os.environ.get("AGENT_RUNTIME_ARN", "")
    if not arn:
        raise SmokeCheckError("AGENT_RUNTIME_ARN is not set: the function does not know which runtime to check")
    figures = check_agent(agentcore_stream(arn, os.environ.get("AGENT_RUNTIME_QUALIFIER", "DEFAULT")))
    return {"check": "agent", **figures.to_json()}


__all__ = [
    "SMOKE_PROMPT",
    "AgentFigures",
    "AgentStream",
    "agentcore_stream",
    "check_agent",
    "handler",
    "http_agent_stream",
]
