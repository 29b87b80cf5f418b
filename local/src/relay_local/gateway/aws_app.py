"""One loopback HTTP server for the local AWS endpoints the relay's functions call, on the same event loop as
the WebSocket API it fronts: ``@connections`` (``/{stage}/@connections/{id}``), Lambda Invoke
(``/2015-03-31/functions/{name}/invocations``), the AgentCore data plane (``/runtimes/{arn}/...``) and the dev
user pool's JWKS (``/{pool}/.well-known/jwks.json``). Their paths do not overlap, so one port serves them all;
the WebSocket API itself listens on its own socket, started and stopped by this app's lifespan.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.routing import Route

from relay_local.gateway.agentcore_dataplane import AgentCoreDataPlane
from relay_local.gateway.connections_api import connections_routes
from relay_local.gateway.lambda_invoke import LambdaInvokeService
from relay_local.gateway.websocket_api import WebSocketApi
from relay_local.jwks_issuer import DevTokenIssuer


def create_aws_app(
    *,
    websocket_api: WebSocketApi,
    websocket_socket: socket.socket,
    lambda_service: LambdaInvokeService,
    dataplane: AgentCoreDataPlane,
    issuer: DevTokenIssuer,
) -> Starlette:
    """The app; serve it with :class:`relay_local.servers.BackgroundServer` (the lifespan starts the WebSocket API
    on ``websocket_socket`` and stops it, closing every client connection, on shutdown)."""

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        await dataplane.open()
        await websocket_api.start(websocket_socket)
        try:
            yield
        finally:
            await websocket_api.stop()
            await dataplane.aclose()

    routes: list[Route] = [
        *connections_routes(websocket_api),
        *lambda_service.routes(),
        *dataplane.routes(),
        *issuer.routes(),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


__all__ = ["create_aws_app"]
