"""The relay's view of the agent: open a turn's event stream, and cancel a turn, on one AgentCore session.

:class:`AgentRuntime` is the interface the relay depends on; :class:`BotoAgentRuntime` implements it with
boto3's ``bedrock-agentcore`` ``invoke_agent_runtime`` (so ``AWS_ENDPOINT_URL_BEDROCK_AGENTCORE`` points it at
the local data plane with no code path of ours). A turn's body is SSE (ARCHITECTURE §3); the relay decodes it
with :class:`relay_core.sse.SseDecoder`, whatever the transport's chunking.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from relay_core.agent.events import AgentCancel, AgentPayload
from relay_core.fields import encode_json

if TYPE_CHECKING:
    from mypy_boto3_bedrock_agentcore import BedrockAgentCoreClient

READ_SIZE = 64 * 1024
"""Most bytes taken from the body per read; a read returns as soon as any bytes are there."""
SSE_CONTENT_TYPE = "text/event-stream"
JSON_CONTENT_TYPE = "application/json"


class AgentUnavailableError(Exception):
    """The agent could not be reached or refused the request (the turn ends with ``agent_unavailable``)."""


class TurnStream(Protocol):
    """The body of one turn: raw bytes as they arrive. ``close`` may be called from another thread to stop a
    blocked read."""

    def chunks(self) -> Iterator[bytes]: ...

    def close(self) -> None: ...


class AgentRuntime(Protocol):
    def open_turn(self, *, session_id: str, payload: AgentPayload) -> TurnStream:
        """Start a turn; raises :class:`AgentUnavailableError` when the agent cannot be invoked."""
        ...

    def cancel(self, *, session_id: str, request_id: str, played_ms: int | None = None) -> list[str]:
        """Ask the agent to cancel the turn ``request_id`` of the session (``played_ms``: how much of its audio the
        listener heard, so the agent keeps only those words); the request ids it cancelled."""
        ...


class BodyStream:
    """A botocore ``StreamingBody`` read as it arrives (not in fixed-size blocks, which would hold back a short
    SSE event until more bytes come)."""

    def __init__(self, body: Any) -> None:
        self._body = body
        raw = getattr(body, "_raw_stream", body)  # urllib3's response: read1() returns what is there
        self._read = raw.read1 if hasattr(raw, "read1") else body.read

    def chunks(self) -> Iterator[bytes]:
        while True:
            chunk = self._read(READ_SIZE)
            if not chunk:
                return
            yield bytes(chunk)

    def close(self) -> None:
        self._body.close()


class BotoAgentRuntime:
    """``invoke_agent_runtime`` on one agent runtime (ARN + qualifier)."""

    def __init__(self, client: BedrockAgentCoreClient, *, runtime_arn: str, qualifier: str) -> None:
        self._client = client
        self._arn = runtime_arn
        self._qualifier = qualifier

    def open_turn(self, *, session_id: str, payload: AgentPayload) -> TurnStream:
        response = self._invoke(session_id, encode_json(payload.to_json()), accept=SSE_CONTENT_TYPE)
        return BodyStream(response["response"])

    def cancel(self, *, session_id: str, request_id: str, played_ms: int | None = None) -> list[str]:
        body = encode_json(AgentCancel(request_id=request_id, played_ms=played_ms).to_json())
        response = self._invoke(session_id, body, accept=JSON_CONTENT_TYPE)
        stream = response["response"]
        try:
            answer = json.loads(stream.read() or b"{}")
        except ValueError:
            return []
        finally:
            stream.close()
        cancelled = answer.get("cancelled", []) if isinstance(answer, dict) else []
        return [str(x) for x in cancelled]

    def _invoke(self, session_id: str, body: str, *, accept: str) -> Any:
        try:
            return self._client.invoke_agent_runtime(
                agentRuntimeArn=self._arn,
                qualifier=self._qualifier,
                runtimeSessionId=session_id,
                payload=body.encode("utf-8"),
                contentType=JSON_CONTENT_TYPE,
                accept=accept,
            )
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "unknown")
            raise AgentUnavailableError(f"invoke_agent_runtime failed: {code}") from exc
        except BotoCoreError as exc:
            raise AgentUnavailableError(f"invoke_agent_runtime failed: {type(exc).__name__}") from exc
