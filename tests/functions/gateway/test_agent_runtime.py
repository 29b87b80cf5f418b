"""BotoAgentRuntime: the standard boto3 invoke_agent_runtime call (moto has no AgentCore data plane, so botocore's
Stubber answers it), the SSE body read as it arrives, and the cancel request on the same session."""

from __future__ import annotations

import io
import json
import os
import threading
from types import ModuleType

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from relay_core.agent.events import AgentEnd, AgentPayload, AgentStart, TextDelta, TurnMode, parse_event
from relay_core.speech_options import SpeechOptions
from relay_core.sse import SseDecoder
from relay_functions.gateway.agent_runtime import AgentUnavailableError, BodyStream, BotoAgentRuntime

SESSION = "kokoro-relay-conversation-0123456789abcdef0123456789abcdef"


def runtime(gw: ModuleType) -> tuple[BotoAgentRuntime, Stubber]:
    client = boto3.client("bedrock-agentcore", region_name=gw.REGION)
    return BotoAgentRuntime(client, runtime_arn=gw.RUNTIME_ARN, qualifier="DEFAULT"), Stubber(client)


def test_a_turn_is_invoked_on_the_session_and_its_sse_body_decoded(aws: None, gw: ModuleType) -> None:
    agent, stub = runtime(gw)
    events = [AgentStart("t-1"), TextDelta("t-1", 0, "Hello there. "), AgentEnd("t-1")]
    body = gw.sse(*events)
    payload = AgentPayload(prompt="hi", mode=TurnMode.BIDI, options=SpeechOptions("jf_alpha"), request_id="t-1")
    stub.add_response(
        "invoke_agent_runtime",
        {"contentType": "text/event-stream", "statusCode": 200, "response": StreamingBody(io.BytesIO(body), len(body))},
        {
            "agentRuntimeArn": gw.RUNTIME_ARN,
            "qualifier": "DEFAULT",
            "runtimeSessionId": SESSION,
            "payload": json.dumps(payload.to_json(), separators=(",", ":")).encode(),
            "contentType": "application/json",
            "accept": "text/event-stream",
        },
    )
    with stub:
        stream = agent.open_turn(session_id=SESSION, payload=payload)
        decoder = SseDecoder()
        decoded = [parse_event(e.data) for chunk in stream.chunks() for e in decoder.feed(chunk)]
        stream.close()
    assert decoded == events
    stub.assert_no_pending_responses()


def test_a_chunk_is_handed_over_as_soon_as_it_arrives() -> None:
    """A short event must not wait for a full read block (or the end of the body)."""
    read_fd, write_fd = os.pipe()
    raw = os.fdopen(read_fd, "rb")
    body = StreamingBody(raw, None)  # type: ignore[arg-type]  # a body of unknown length
    stream = BodyStream(body)
    chunks = stream.chunks()
    os.write(write_fd, b'data: {"type":"agent_start"}\n\n')
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(next(chunks)))
    reader.start()
    reader.join(timeout=5)
    try:
        assert got == [b'data: {"type":"agent_start"}\n\n']
    finally:
        os.close(write_fd)
        reader.join(timeout=5)
        stream.close()


def expect_cancel(stub: Stubber, gw: ModuleType, payload: bytes) -> None:
    """Expect one JSON ``invoke_agent_runtime`` on SESSION with exactly ``payload``; answer that t-1 was cancelled."""
    answer = b'{"cancelled":["t-1"]}'
    stub.add_response(
        "invoke_agent_runtime",
        {
            "contentType": "application/json",
            "statusCode": 200,
            "response": StreamingBody(io.BytesIO(answer), len(answer)),
        },
        {
            "agentRuntimeArn": gw.RUNTIME_ARN,
            "qualifier": "DEFAULT",
            "runtimeSessionId": SESSION,
            "payload": payload,
            "contentType": "application/json",
            "accept": "application/json",
        },
    )


def test_cancel_goes_to_the_same_session(aws: None, gw: ModuleType) -> None:
    agent, stub = runtime(gw)
    expect_cancel(stub, gw, b'{"action":"cancel","request_id":"t-1"}')
    with stub:
        assert agent.cancel(session_id=SESSION, request_id="t-1") == ["t-1"]


@pytest.mark.parametrize("code", ["ThrottlingException", "ResourceNotFoundException", "AccessDeniedException"])
def test_invoke_errors_become_agent_unavailable(aws: None, gw: ModuleType, code: str) -> None:
    agent, stub = runtime(gw)
    stub.add_client_error("invoke_agent_runtime", service_error_code=code, http_status_code=400)
    with stub, pytest.raises(AgentUnavailableError, match=code):
        agent.open_turn(session_id=SESSION, payload=AgentPayload(prompt="hi"))


def test_cancel_carries_played_ms_when_the_client_sent_it(aws: None, gw: ModuleType) -> None:
    agent, stub = runtime(gw)
    expect_cancel(stub, gw, b'{"action":"cancel","request_id":"t-1","played_ms":2350}')
    with stub:
        assert agent.cancel(session_id=SESSION, request_id="t-1", played_ms=2350) == ["t-1"]
    stub.assert_no_pending_responses()
