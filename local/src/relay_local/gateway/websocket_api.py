"""A local API Gateway WebSocket API: the same handshake, routes, limits and timeouts as AWS, with the relay's
Lambda handlers invoked in-process (each call in a worker thread, with an API-Gateway-shaped event and a Lambda
context).

What it does, as AWS does (docs/local-stack.md has the details and sources):
- ``$connect``: the token must be in the query string (the authorizer's identity source; missing → 401 without
  calling the authorizer); the REQUEST authorizer runs; ``Exception("Unauthorized")`` → 401, a Deny policy →
  403, any other failure → 500; then the ``$connect`` handler, whose non-2xx status refuses the handshake.
- Messages: route selection on ``$request.body.action`` (not JSON, binary, or no such route → ``$default``);
  every message is handed to its route's handler concurrently (AWS gives no ordering between invocations); a
  route listed in ``two_way_routes`` sends the handler's ``body`` back (AWS: only routes with a route response).
- Limits: a frame over 32 KB or a message over 128 KB closes the connection with 1009 (AWS's documented
  behaviour); idle connections close after ``idle_timeout_s`` (1001 "Going away") and every connection after
  ``max_connection_s``.
- ``$disconnect`` runs once per connection that was accepted, whoever closed it, with the close code and reason.
- The ``@connections`` operations (:meth:`post_to_connection`, :meth:`describe_connection`,
  :meth:`delete_connection`) back the HTTP API in :mod:`relay_local.gateway.connections_api`.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from relay_core import limits
from relay_core.close_codes import GOING_AWAY, NORMAL_CLOSURE
from relay_local.gateway.events import (
    CONNECT_ROUTE,
    DEFAULT_ROUTE,
    DISCONNECT_ROUTE,
    ApiIdentity,
    ConnectionInfo,
    authorizer_event,
    connect_event,
    disconnect_event,
    message_event,
    new_connection_id,
)
from relay_local.gateway.lambda_context import LambdaContext
from relay_local.gateway.routing import (
    AuthorizerResponseError,
    evaluate_authorizer,
    integration_result,
    select_route,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")

Handler = Callable[[dict[str, Any], Any], Any]
"""A Lambda handler: ``handler(event, context) -> response``."""

UNAUTHORIZED = "Unauthorized"
"""The exception message with which an authorizer says 401 (AWS's convention)."""
IDENTITY_SOURCE_PARAM = "token"
"""The authorizer's identity source: ``route.request.querystring.token``."""


class ConnectionGoneError(LookupError):
    """No open connection has this id (``@connections`` answers 410 GoneException)."""


class PayloadTooLargeError(ValueError):
    """A posted message exceeds API Gateway's 128 KB message quota (413 PayloadTooLargeException)."""


@dataclass(frozen=True)
class RouteHandlers:
    """The Lambda handlers behind each route. Routes without a handler do not exist (their messages go to
    ``$default``; no ``$default`` handler → the message is dropped, as AWS drops unrouted messages)."""

    authorizer: Handler | None = None
    routes: Mapping[str, Handler] = field(default_factory=dict)
    """Route key → handler, including ``$connect``, ``$disconnect`` and ``$default`` when defined."""
    function_names: Mapping[str, str] = field(default_factory=dict)
    """Route key (or ``"authorizer"``) → function name, for the Lambda context (default: the route key)."""


@dataclass(frozen=True)
class GatewayConfig:
    """The API's identity and quotas; defaults are AWS's."""

    api: ApiIdentity = field(default_factory=ApiIdentity)
    frame_bytes: int = limits.APIGW_FRAME_BYTES
    message_bytes: int = limits.APIGW_MESSAGE_BYTES
    idle_timeout_s: float = limits.APIGW_IDLE_TIMEOUT_S
    max_connection_s: float = limits.APIGW_CONNECTION_LIFETIME_S
    two_way_routes: frozenset[str] | None = None
    """Routes whose handler's ``body`` goes back to the client; None = every route except the lifecycle ones."""
    handler_threads: int = 64


@dataclass
class _Live:
    websocket: ServerConnection
    info: ConnectionInfo
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    """In-flight route invocations (kept referenced until done; like Lambda calls, they outlive a disconnect)."""
    expiring: bool = False


@dataclass
class GatewayStats:
    """What went through the gateway, for tests and benchmarks."""

    connections: int = 0
    messages_in: int = 0
    messages_out: int = 0
    largest_out_bytes: int = 0


def _json_response(connection: ServerConnection, status: HTTPStatus, message: str) -> Response:
    response = connection.respond(status, f'{{"message": "{message}"}}')
    del response.headers["Content-Type"]
    response.headers["Content-Type"] = "application/json"
    return response


def _utf8_fragments(text: str, frame_bytes: int) -> list[str]:
    """Split ``text`` into pieces of at most ``frame_bytes`` UTF-8 bytes, never inside a character."""
    data = text.encode("utf-8")
    pieces: list[str] = []
    start = 0
    while start < len(data):
        end = min(start + frame_bytes, len(data))
        while end < len(data) and (data[end] & 0xC0) == 0x80:
            end -= 1
        pieces.append(data[start:end].decode("utf-8"))
        start = end
    return pieces


class WebSocketApi:
    """The gateway. ``await start(sock)`` on a running loop, ``await stop()`` on the same loop."""

    def __init__(self, handlers: RouteHandlers, config: GatewayConfig | None = None) -> None:
        self.handlers = handlers
        self.config = config or GatewayConfig()
        self.stats = GatewayStats()
        self._executor = ThreadPoolExecutor(self.config.handler_threads, thread_name_prefix="apigw-lambda")
        self._pending: dict[ServerConnection, ConnectionInfo] = {}
        self._live: dict[str, _Live] = {}
        self._server: Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watchdog: asyncio.Task[None] | None = None

    async def on_loop(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` on the gateway's own loop, from any loop (the ``@connections`` API serves its HTTP
        requests on another loop, so a burst of POSTs never stalls the WebSocket clients' reads and writes)."""
        loop = self._loop
        if loop is None:
            coro.close()
            raise ConnectionGoneError("the WebSocket API is not running")
        if asyncio.get_running_loop() is loop:
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))

    @property
    def message_routes(self) -> frozenset[str]:
        return frozenset(k for k in self.handlers.routes if k not in (CONNECT_ROUTE, DISCONNECT_ROUTE))

    # --- lifecycle -----------------------------------------------------------------------------------------
    async def start(self, sock: socket.socket) -> None:
        """Serve WebSocket clients on the bound socket ``sock`` (path ``/{stage}``)."""
        self._loop = asyncio.get_running_loop()
        self._server = await serve(
            self._session,
            sock=sock,
            process_request=self._handshake,
            max_size=(self.config.message_bytes, self.config.frame_bytes),
            compression=None,
            ping_interval=None,
            server_header="local-apigateway",
        )
        self._watchdog = asyncio.create_task(self._expire_connections())

    async def stop(self) -> None:
        """Close every connection (1001; ``$disconnect`` runs for each) and stop serving."""
        if self._watchdog is not None:
            self._watchdog.cancel()
        for live in list(self._live.values()):
            await live.websocket.close(GOING_AWAY, "Going away")
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        self._executor.shutdown(wait=False, cancel_futures=True)

    # --- invoking handlers ---------------------------------------------------------------------------------
    async def _invoke(self, key: str, handler: Handler, event: dict[str, Any]) -> Any:
        name = self.handlers.function_names.get(key, key.lstrip("$"))
        context = LambdaContext(function_name=name, timeout_s=limits.APIGW_INTEGRATION_TIMEOUT_S)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, handler, event, context)

    # --- $connect ------------------------------------------------------------------------------------------
    async def _handshake(self, connection: ServerConnection, request: Request) -> Response | None:
        url = urlsplit(request.path)
        if url.path.rstrip("/") != f"/{self.config.api.stage}":
            return _json_response(connection, HTTPStatus.FORBIDDEN, "Forbidden")
        query = parse_qs(url.query, keep_blank_values=True)
        headers = {name: value for name, value in request.headers.raw_items()}
        remote = connection.remote_address
        info = ConnectionInfo(
            connection_id=new_connection_id(),
            source_ip=str(remote[0]) if remote else "127.0.0.1",
            user_agent=request.headers.get("User-Agent", ""),
        )
        api = self.config.api
        if self.handlers.authorizer is not None:
            if not query.get(IDENTITY_SOURCE_PARAM, [""])[-1]:
                return _json_response(connection, HTTPStatus.UNAUTHORIZED, UNAUTHORIZED)
            event = authorizer_event(api, info, headers=headers, query=query)
            try:
                answer = await self._invoke("authorizer", self.handlers.authorizer, event)
                decision = evaluate_authorizer(answer, event["methodArn"])
            except AuthorizerResponseError as exc:
                logger.warning("authorizer response rejected: %s", exc)
                return _json_response(connection, HTTPStatus.INTERNAL_SERVER_ERROR, "Internal server error")
            except Exception as exc:  # noqa: BLE001 - any handler failure is an answer to the client, as in AWS
                if str(exc) == UNAUTHORIZED:
                    return _json_response(connection, HTTPStatus.UNAUTHORIZED, UNAUTHORIZED)
                logger.warning("authorizer failed: %r", exc)
                return _json_response(connection, HTTPStatus.INTERNAL_SERVER_ERROR, "Internal server error")
            if not decision.allowed:
                return _json_response(connection, HTTPStatus.FORBIDDEN, "Forbidden")
            info.authorizer = decision.context
        connect = self.handlers.routes.get(CONNECT_ROUTE)
        if connect is not None:
            try:
                result = integration_result(
                    await self._invoke(CONNECT_ROUTE, connect, connect_event(api, info, headers=headers, query=query))
                )
            except Exception as exc:  # noqa: BLE001 - a failing $connect refuses the connection, as in AWS
                logger.warning("$connect handler failed: %r", exc)
                return _json_response(connection, HTTPStatus.INTERNAL_SERVER_ERROR, "Internal server error")
            if not 200 <= result.status_code < 300:
                status = HTTPStatus(result.status_code) if result.status_code in HTTPStatus else HTTPStatus.FORBIDDEN
                return _json_response(connection, status, status.phrase)
        self._pending[connection] = info
        return None

    # --- messages ------------------------------------------------------------------------------------------
    async def _session(self, websocket: ServerConnection) -> None:
        info = self._pending.pop(websocket)
        live = _Live(websocket, info)
        self._live[info.connection_id] = live
        self.stats.connections += 1
        try:
            async for message in websocket:
                info.last_active_ms = int(time.time() * 1000)
                self.stats.messages_in += 1
                task = asyncio.create_task(self._route(live, message))
                live.tasks.add(task)
                task.add_done_callback(live.tasks.discard)
        except ConnectionClosed:
            pass  # abnormal closure or a limit: $disconnect below reports the code
        finally:
            del self._live[info.connection_id]
            code = websocket.close_code if websocket.close_code is not None else 1006
            reason = websocket.close_reason or ""
            await self._disconnected(info, code, reason)

    async def _route(self, live: _Live, message: str | bytes) -> None:
        route = select_route(message, self.message_routes)
        handler = self.handlers.routes.get(route)
        if handler is None:
            return
        event = message_event(self.config.api, live.info, route_key=route, data=message)
        try:
            result = integration_result(await self._invoke(route, handler, event))
        except Exception as exc:  # noqa: BLE001 - AWS answers a failed integration on a two-way route like this
            logger.warning("route %s handler failed: %r", route, exc)
            if self._two_way(route):
                await self._send(live, '{"message": "Internal server error"}')
            return
        if result.body is not None and self._two_way(route):
            await self._send(live, result.body)

    def _two_way(self, route: str) -> bool:
        routes = self.config.two_way_routes
        return route in self.message_routes if routes is None else route in routes

    async def _disconnected(self, info: ConnectionInfo, code: int, reason: str) -> None:
        handler = self.handlers.routes.get(DISCONNECT_ROUTE)
        if handler is None:
            return
        try:
            await self._invoke(
                DISCONNECT_ROUTE, handler, disconnect_event(self.config.api, info, status_code=code, reason=reason)
            )
        except Exception as exc:  # noqa: BLE001 - $disconnect is best effort in AWS too
            logger.warning("$disconnect handler failed: %r", exc)

    # --- @connections --------------------------------------------------------------------------------------
    async def _send(self, live: _Live, data: str | bytes) -> None:
        size = len(data.encode("utf-8")) if isinstance(data, str) else len(data)
        try:
            if isinstance(data, str) and size > self.config.frame_bytes:
                await live.websocket.send(_utf8_fragments(data, self.config.frame_bytes))
            else:
                await live.websocket.send(data)
        except ConnectionClosed as exc:
            raise ConnectionGoneError(live.info.connection_id) from exc
        self.stats.messages_out += 1
        self.stats.largest_out_bytes = max(self.stats.largest_out_bytes, size)
        live.info.last_active_ms = int(time.time() * 1000)

    def _find(self, connection_id: str) -> _Live:
        live = self._live.get(connection_id)
        if live is None:
            raise ConnectionGoneError(connection_id)
        return live

    async def post_to_connection(self, connection_id: str, data: bytes) -> None:
        """Send one message (text when ``data`` is UTF-8, else binary). Raises :class:`ConnectionGoneError`,
        :class:`PayloadTooLargeError`. Must run on the gateway's loop."""
        if len(data) > self.config.message_bytes:
            raise PayloadTooLargeError(f"{len(data)} bytes exceed the {self.config.message_bytes}-byte message quota")
        live = self._find(connection_id)
        try:
            payload: str | bytes = data.decode("utf-8")
        except UnicodeDecodeError:
            payload = data
        await self._send(live, payload)

    def describe_connection(self, connection_id: str) -> ConnectionInfo:
        """The connection's info (``GET @connections/{id}``); :class:`ConnectionGoneError` if it is not open."""
        return self._find(connection_id).info

    async def delete_connection(self, connection_id: str) -> None:
        """Close the connection from the server side (``DELETE @connections/{id}``)."""
        live = self._find(connection_id)
        await live.websocket.close(NORMAL_CLOSURE, "")

    @property
    def open_connections(self) -> list[str]:
        return list(self._live)

    # --- timeouts ------------------------------------------------------------------------------------------
    async def _expire_connections(self) -> None:
        tick = max(0.05, min(1.0, self.config.idle_timeout_s / 4))
        while True:
            await asyncio.sleep(tick)
            now_ms = time.time() * 1000
            for live in list(self._live.values()):
                idle_s = (now_ms - live.info.last_active_ms) / 1000
                age_s = (now_ms - live.info.connected_at_ms) / 1000
                expired = idle_s >= self.config.idle_timeout_s or age_s >= self.config.max_connection_s
                if expired and not live.expiring:
                    live.expiring = True
                    closing = asyncio.create_task(live.websocket.close(GOING_AWAY, "Going away"))
                    live.tasks.add(closing)
                    closing.add_done_callback(live.tasks.discard)


__all__ = [
    "DEFAULT_ROUTE",
    "IDENTITY_SOURCE_PARAM",
    "ConnectionGoneError",
    "GatewayConfig",
    "GatewayStats",
    "Handler",
    "PayloadTooLargeError",
    "RouteHandlers",
    "WebSocketApi",
]
