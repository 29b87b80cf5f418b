"""One loopback HTTP server for the local AWS endpoints the relay's functions call: ``@connections``
(``/{stage}/@connections/{id}``), Lambda Invoke (``/2015-03-31/functions/{name}/invocations``), the AgentCore
data plane (``/runtimes/{arn}/...``), and the other stand-ins' APIs handed in as
:class:`~relay_local.aws.service.RoutedService` (the dev user pool's JWKS ``/{pool}/.well-known/jwks.json``, the
Bedrock runtime ``/model/{modelId}/converse[-stream]``). Their paths do not overlap, so one port serves them all.
The WebSocket API itself listens on its own socket, on an event loop thread of its own
(:class:`relay_local.servers.LoopThread`), started and stopped by this app's lifespan.

Two loops, as two services in AWS: under many concurrent turns the relays' ``@connections`` POSTs, the Lambda
hand-offs and the agent streams (this server's loop) never queue behind the WebSocket clients' frames (the
gateway's loop), nor the other way round; a POST crosses to the gateway's loop only for the send itself.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.routing import BaseRoute

from relay_local.aws.service import RoutedService
from relay_local.gateway.agentcore_dataplane import AgentCoreDataPlane
from relay_local.gateway.connections_api import connections_routes
from relay_local.gateway.lambda_invoke import LambdaInvokeService
from relay_local.gateway.websocket_api import WebSocketApi
from relay_local.servers import LoopThread


def create_aws_app(
    *,
    websocket_api: WebSocketApi,
    websocket_socket: socket.socket,
    lambda_service: LambdaInvokeService,
    dataplane: AgentCoreDataPlane,
    services: Sequence[RoutedService] = (),
) -> Starlette:
    """The app; serve it with :class:`relay_local.servers.BackgroundServer` (the lifespan starts the WebSocket API
    on ``websocket_socket`` and stops it, closing every client connection, on shutdown). ``services`` are the other
    stand-ins served on the same port, in order."""

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

    routes: list[BaseRoute] = [
        *connections_routes(websocket_api),
        *lambda_service.routes(),
        *dataplane.routes(),
        *(route for service in services for route in service.routes()),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


__all__ = ["create_aws_app"]
