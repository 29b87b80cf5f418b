"""The ``@connections`` HTTP API of the local WebSocket API: what the handlers' boto3
``apigatewaymanagementapi`` client calls through ``endpoint_url = http://127.0.0.1:<port>/{stage}``.

- ``POST /{stage}/@connections/{id}``: body = the message → 200; 410 ``GoneException`` when the connection is not
  open; 413 ``PayloadTooLargeException`` over 128 KB.
- ``GET  /{stage}/@connections/{id}``: ``{connectedAt, lastActiveAt, identity{sourceIp, userAgent}}``.
- ``DELETE /{stage}/@connections/{id}``: closes the connection → 204 (``$disconnect`` follows).
"""

from __future__ import annotations

import time

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from relay_local.aws.errors import aws_error
from relay_local.gateway.websocket_api import ConnectionGoneError, PayloadTooLargeError, WebSocketApi


def _iso(epoch_ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch_ms / 1000)) + f".{epoch_ms % 1000:03d}Z"


def _gone(connection_id: str) -> Response:
    return aws_error(410, "GoneException", f"Connection {connection_id} is gone (not connected, or already closed)")


def connections_routes(api: WebSocketApi) -> list[Route]:
    """Routes serving the ``@connections`` API of ``api`` (on any loop: sends run on the gateway's own loop)."""
    stage = api.config.api.stage

    async def post(request: Request) -> Response:
        connection_id = request.path_params["connection_id"]
        body = await request.body()
        try:
            await api.on_loop(api.post_to_connection(connection_id, body))
        except PayloadTooLargeError as exc:
            return aws_error(413, "PayloadTooLargeException", str(exc))
        except ConnectionGoneError:
            return _gone(connection_id)
        return Response(status_code=200)

    async def get(request: Request) -> Response:
        connection_id = request.path_params["connection_id"]
        try:
            info = api.describe_connection(connection_id)
        except ConnectionGoneError:
            return _gone(connection_id)
        return JSONResponse(
            {
                "connectedAt": _iso(info.connected_at_ms),
                "lastActiveAt": _iso(info.last_active_ms),
                "identity": {"sourceIp": info.source_ip, "userAgent": info.user_agent},
            }
        )

    async def delete(request: Request) -> Response:
        connection_id = request.path_params["connection_id"]
        try:
            await api.on_loop(api.delete_connection(connection_id))
        except ConnectionGoneError:
            return _gone(connection_id)
        return Response(status_code=204)

    path = f"/{stage}/@connections/{{connection_id}}"
    return [
        Route(path, post, methods=["POST"]),
        Route(path, get, methods=["GET"]),
        Route(path, delete, methods=["DELETE"]),
    ]


__all__ = ["connections_routes"]
