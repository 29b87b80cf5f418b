"""What every message route shares: reading the API Gateway WebSocket event, finding who is on the connection,
and answering the client with relay_core's messages (rejections are ``error`` without ``seq``).

A route function raises a relay_core :class:`~relay_core.errors.RelayError` (its ``code`` a
:class:`~relay_core.client.messages.ClientErrorCode`) to reject a message; :func:`handle_client_message` posts
it to the client as an ``error`` and the connection stays usable. Any other exception is logged with its stack
and answered with a generic ``internal_error``: no stack trace ever reaches a client.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools.utilities.data_classes import APIGatewayWebSocketEvent

from relay_core.client.messages import (
    ClientErrorCode,
    ClientMessage,
    Rejection,
    parse_client_message,
    serialize,
    unknown_action_error,
)
from relay_core.errors import RelayError
from relay_functions.gateway.connections import Connection
from relay_functions.gateway.deps import GatewayDeps
from relay_functions.gateway.observability import append_keys, client_error, count, logger
from relay_functions.gateway.posting import ConnectionPoster, PostFailedError

OK: dict[str, Any] = {"statusCode": 200}


@dataclass(frozen=True, slots=True)
class RouteContext:
    """One client message as API Gateway delivered it."""

    connection_id: str
    endpoint_url: str
    """The @connections endpoint: ``https://{domainName}/{stage}``."""
    route_key: str
    body: str | bytes | None
    """The frame as the client sent it: a text frame's text, a binary frame's bytes (never decoded here: the
    parser in relay_core decides whether they are UTF-8 JSON, and rejects them with ``invalid_json`` if not)."""
    poster: ConnectionPoster

    def send(self, message: str) -> bool:
        """Post a message to this connection; False if the client is gone."""
        return self.poster.post(self.connection_id, message)


def endpoint_of(event: APIGatewayWebSocketEvent) -> str:
    context = event.request_context
    return f"https://{context.domain_name}/{context.stage}"


def route_context(raw_event: Mapping[str, Any], deps: GatewayDeps) -> RouteContext:
    event = APIGatewayWebSocketEvent(dict(raw_event))
    context = event.request_context
    endpoint = endpoint_of(event)
    return RouteContext(
        connection_id=context.connection_id,
        endpoint_url=endpoint,
        route_key=context.route_key,
        body=raw_body(event),
        poster=deps.poster(endpoint),
    )


def raw_body(event: APIGatewayWebSocketEvent) -> str | bytes | None:
    """The message's body: text as is; a binary frame (``isBase64Encoded``) as its bytes. Unlike Powertools'
    ``decoded_body`` this never decodes UTF-8, so a binary frame that is not UTF-8 cannot raise here."""
    body = event.body
    if not event.is_base64_encoded or body is None:
        return body
    try:
        return base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        return body.encode("utf-8", "surrogatepass")  # not base64 after all: the parser rejects it as invalid_json


def rejection(code: ClientErrorCode, message: str) -> RelayError:
    """A typed rejection of one client message (answered as ``error {code, message}``)."""
    return RelayError(message, code=code.value)


NOT_REGISTERED = "this connection is not registered: reconnect with a valid token"


def registered_connection(ctx: RouteContext, deps: GatewayDeps) -> Connection:
    connection = deps.connections.get(ctx.connection_id)
    if connection is None:
        raise rejection(ClientErrorCode.UNAUTHORIZED, NOT_REGISTERED)
    return connection


def reject(ctx: RouteContext, exc: BaseException, *, turn_id: str | None = None) -> None:
    """Answer ``exc`` to the client as an ``error`` (never a stack trace) and count it."""
    error = Rejection.from_exception(exc, turn_id=turn_id)
    client_error(error.code)
    try:
        ctx.send(serialize(error))
    except PostFailedError as post_exc:
        logger.error("the error could not be posted", extra={"code": error.code, "reason": str(post_exc)})


RouteFunction = Callable[[RouteContext, Connection, Any, GatewayDeps], None]
"""A route acting for the connection's user: :func:`handle_client_message` reads the connection before it."""


@dataclass(frozen=True, slots=True)
class ReadsItsConnection:
    """A route that reads the connection itself, in the conditional write that decides (``sendMessage`` claims
    the connection and gets its user in one write): no read before it. It raises the ``unauthorized`` rejection
    of :func:`registered_connection` for an unrecorded connection."""

    run: Callable[[RouteContext, Any, GatewayDeps], None]


Route = RouteFunction | ReadsItsConnection


def handle_client_message(
    raw_event: Mapping[str, Any], deps: GatewayDeps, routes: Mapping[type[ClientMessage], Route]
) -> dict[str, Any]:
    """Parse the body, find the connection's user, run the route for the message's type; reject on error."""
    ctx = route_context(raw_event, deps)
    count("ClientMessages")
    append_keys(connection_id=ctx.connection_id, route=ctx.route_key)
    turn_id: str | None = None
    try:
        message = parse_client_message(ctx.body or "")
        turn_id = getattr(message, "turn_id", None)
        route = routes.get(type(message))
        if route is None:
            raise unknown_action_error(message.to_json().get("action"))
        if isinstance(route, ReadsItsConnection):
            route.run(ctx, message, deps)
        else:
            connection = registered_connection(ctx, deps)
            append_keys(user_id=connection.user_id)
            route(ctx, connection, message, deps)
    except RelayError as exc:
        logger.info("message rejected", extra={"code": exc.code})
        reject(ctx, exc, turn_id=turn_id)
    except Exception as exc:  # noqa: BLE001 - logged with its stack; the client gets a generic internal_error
        logger.exception("a message could not be handled")
        reject(ctx, exc, turn_id=turn_id)
        return {"statusCode": 500}
    return OK
