"""One loopback HTTP server for the local AWS endpoints the relay's functions call: ``@connections``
(``/{stage}/@connections/{id}``), Lambda Invoke (``/2015-03-31/functions/{name}/invocations``), the AgentCore
data plane (``/runtimes/{arn}/...``), the Bedrock runtime (``/model/{modelId}/converse[-stream]``, optional) and
the dev user pool's JWKS (``/{pool}/.well-known/jwks.json``). Their
paths do not overlap, so one port serves them all. The WebSocket API itself listens on its own socket, on an
event loop thread of its own (:class:`relay_local.servers.LoopThread`), started and stopped by this app's lifespan.

Two loops, as two services in AWS: under many concurrent turns the relays' ``@connections`` POSTs, the Lambda
hand-offs and the agent streams (this server's loop) never queue behind the WebSocket clients' frames (the
gateway's loop), nor the other way round; a POST crosses to the gateway's loop only for the send itself.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.routing import Route

from relay_local.bedrock.runtime import BedrockRuntime
from relay_local.gateway.agentcore_dataplane import AgentCoreDataPlane
from relay_local.gateway.connections_api import connections_routes
from relay_local.gateway.lambda_invoke import LambdaInvokeService
from relay_local.gateway.websocket_api import WebSocketApi
from relay_local.jwks_issuer import DevTokenIssuer
from relay_local.servers import LoopThread


def create_aws_app(
    *,
    websocket_api: WebSocketApi,
    websocket_socket: socket.socket,
    lambda_service: LambdaInvokeService,
    dataplane: AgentCoreDataPlane,
    issuer: DevTokenIssuer,
    bedrock: BedrockRuntime | None = None,
) -> Starlette:
    """The app; serve it with :class:`relay_local.servers.BackgroundServer` (the lifespan starts the WebSocket API
    on ``websocket_socket`` and stops it, closing every client connection, on shutdown)."""

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        await dataplane.open()
        gateway_loop = LoopThread("apigw-websocket").start()
        try:
            await asyncio.to_thread(gateway_loop.run, websocket_api.start(websocket_socket))
            yield
        finally:
            try:
                await asyncio.to_thread(gateway_loop.run, websocket_api.stop())
            finally:
                await asyncio.to_thread(gateway_loop.stop)
                await dataplane.aclose()

    routes: list[Route] = [
        *connections_routes(websocket_api),
        *lambda_service.routes(),
        *dataplane.routes(),
        *issuer.routes(),
        *(bedrock.routes() if bedrock is not None else []),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


__all__ = ["create_aws_app"]
