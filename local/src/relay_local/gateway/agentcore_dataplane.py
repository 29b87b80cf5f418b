"""The local AgentCore data plane: the HTTP paths boto3's ``bedrock-agentcore`` client calls, forwarded to the
local agent app, so the relay's ``invoke_agent_runtime`` runs unchanged through ``endpoint_url``.

- ``POST /runtimes/{agentRuntimeArn}/invocations?qualifier=…``: the body and the
  ``X-Amzn-Bedrock-AgentCore-Runtime-Session-Id`` header go to the agent's ``/invocations``; the answer (the SSE
  stream of a turn, or the JSON answer to a cancel) streams back chunk by chunk, unbuffered. A missing session id
  gets one, as AgentCore assigns it, echoed in the response header.
- ``POST /runtimes/{agentRuntimeArn}/stopruntimesession``: AgentCore ends the session's microVM, and with it
  every turn it runs; locally the agent is asked to cancel the session's turns.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import httpx
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from relay_core.agent.events import AGENTCORE_SESSION_HEADER, AgentCancel
from relay_local.aws.errors import aws_error

PASSED_HEADERS = ("content-type", "accept", AGENTCORE_SESSION_HEADER.lower())


class AgentCoreDataPlane:
    """Forwards AgentCore runtime invocations to the agent app at ``agent_url`` (``http://host:port``).
    ``runtime_arn``: the one runtime this data plane hosts (others → 404), or None to accept any."""

    def __init__(self, agent_url: str, *, runtime_arn: str | None = None) -> None:
        self.agent_url = agent_url
        self.runtime_arn = runtime_arn
        self._client: httpx.AsyncClient | None = None
        self.open_streams = 0
        """Invocations whose answer is still streaming (a relay reading a turn); 0 once every turn's stream ended."""

    async def open(self) -> None:
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(None), limits=httpx.Limits(max_connections=None))

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()

    def _unknown(self, arn: str) -> Response | None:
        if self.runtime_arn is not None and arn != self.runtime_arn:
            return aws_error(
                404, "ResourceNotFoundException", f"No agent runtime {arn} (this one hosts {self.runtime_arn})"
            )
        return None

    async def invoke(self, request: Request) -> Response:
        assert self._client is not None, "AgentCoreDataPlane.open() was not awaited"
        arn = request.path_params["arn"]
        if (missing := self._unknown(arn)) is not None:
            return missing
        headers = {k: v for k, v in request.headers.items() if k.lower() in PASSED_HEADERS}
        session_id = request.headers.get(AGENTCORE_SESSION_HEADER) or f"local-session-{uuid.uuid4()}"
        headers[AGENTCORE_SESSION_HEADER] = session_id
        upstream = self._client.build_request(
            "POST", f"{self.agent_url}/invocations", content=await request.body(), headers=headers
        )
        try:
            answer = await self._client.send(upstream, stream=True)
        except httpx.HTTPError as exc:
            return aws_error(502, "RuntimeClientError", f"the local agent at {self.agent_url} is unreachable: {exc!r}")

        async def body() -> AsyncIterator[bytes]:
            self.open_streams += 1
            try:
                async for chunk in answer.aiter_raw():
                    yield chunk
            finally:
                self.open_streams -= 1

        return StreamingResponse(
            body(),
            status_code=answer.status_code,
            media_type=answer.headers.get("content-type"),
            headers={AGENTCORE_SESSION_HEADER: session_id},
            background=BackgroundTask(answer.aclose),
        )

    async def stop_session(self, request: Request) -> Response:
        assert self._client is not None, "AgentCoreDataPlane.open() was not awaited"
        arn = request.path_params["arn"]
        if (missing := self._unknown(arn)) is not None:
            return missing
        session_id = request.headers.get(AGENTCORE_SESSION_HEADER)
        if not session_id:
            return aws_error(400, "ValidationException", f"{AGENTCORE_SESSION_HEADER} is required")
        await self._client.post(
            f"{self.agent_url}/invocations",
            json=AgentCancel().to_json(),
            headers={AGENTCORE_SESSION_HEADER: session_id},
        )
        return JSONResponse({}, headers={AGENTCORE_SESSION_HEADER: session_id})

    def routes(self) -> list[Route]:
        return [
            Route("/runtimes/{arn:path}/invocations", self.invoke, methods=["POST"]),
            Route("/runtimes/{arn:path}/stopruntimesession", self.stop_session, methods=["POST"]),
        ]


__all__ = ["AgentCoreDataPlane"]
