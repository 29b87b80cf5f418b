"""The events API Gateway (WebSocket API, Lambda proxy integrations) gives Lambda functions, built as AWS builds
them: the REQUEST authorizer event, ``CONNECT``, ``MESSAGE`` and ``DISCONNECT``.

Shapes follow the events AWS delivers (recorded samples in tests/events/apigw/): ``requestContext`` carries
``routeKey``, ``eventType``, ``connectionId``, ``domainName``, ``stage``, ``apiId``, ``connectedAt`` (epoch ms),
``requestTime`` / ``requestTimeEpoch``, ``identity.sourceIp``, and on every route after ``$connect`` the
authorizer's ``context`` (plus ``principalId``) under ``authorizer``.
"""

from __future__ import annotations

import base64
import secrets
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from relay_local.aws.account import LOCAL_ACCOUNT, LOCAL_REGION

CONNECT_ROUTE = "$connect"
DISCONNECT_ROUTE = "$disconnect"
DEFAULT_ROUTE = "$default"

JsonDict = dict[str, Any]


def new_connection_id() -> str:
    """An id shaped like API Gateway's (16 base64 characters ending in ``=``), without ``/`` or ``+`` so it is
    path-safe as AWS's are in practice."""
    while True:
        candidate = base64.b64encode(secrets.token_bytes(11)).decode("ascii")
        if "/" not in candidate and "+" not in candidate:
            return candidate


def _request_time(epoch_s: float) -> str:
    return time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(epoch_s))


@dataclass(frozen=True)
class ApiIdentity:
    """Where the API lives: what ``requestContext`` names (``apiId``, ``stage``, ``domainName``)."""

    api_id: str = "local0api1"
    stage: str = "local"
    domain_name: str = "127.0.0.1"
    region: str = LOCAL_REGION
    account: str = LOCAL_ACCOUNT

    def method_arn(self, route_key: str) -> str:
        """``arn:aws:execute-api:{region}:{account}:{apiId}/{stage}/{routeKey}`` as the authorizer receives it."""
        return f"arn:aws:execute-api:{self.region}:{self.account}:{self.api_id}/{self.stage}/{route_key}"


@dataclass
class ConnectionInfo:
    """What the gateway knows about one client connection (for events and ``GET @connections/{id}``)."""

    connection_id: str
    source_ip: str
    user_agent: str
    connected_at_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    last_active_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    authorizer: JsonDict = field(default_factory=dict)
    """``principalId`` + the authorizer's ``context``, as API Gateway passes them to every route."""


def _request_context(api: ApiIdentity, conn: ConnectionInfo, *, route_key: str, event_type: str) -> JsonDict:
    now = time.time()
    context: JsonDict = {
        "routeKey": route_key,
        "eventType": event_type,
        "extendedRequestId": uuid.uuid4().hex[:16] + "=",
        "requestTime": _request_time(now),
        "messageDirection": "IN",
        "stage": api.stage,
        "connectedAt": conn.connected_at_ms,
        "requestTimeEpoch": int(now * 1000),
        "identity": {"sourceIp": conn.source_ip, "userAgent": conn.user_agent},
        "requestId": uuid.uuid4().hex[:16] + "=",
        "domainName": api.domain_name,
        "connectionId": conn.connection_id,
        "apiId": api.api_id,
    }
    return context


def _header_views(headers: Mapping[str, str]) -> tuple[dict[str, str], dict[str, list[str]]]:
    single = dict(headers)
    return single, {name: [value] for name, value in single.items()}


def _query_views(query: Mapping[str, list[str]]) -> JsonDict:
    if not query:
        return {}
    return {
        "queryStringParameters": {name: values[-1] for name, values in query.items()},
        "multiValueQueryStringParameters": {name: list(values) for name, values in query.items()},
    }


def authorizer_event(
    api: ApiIdentity, conn: ConnectionInfo, *, headers: Mapping[str, str], query: Mapping[str, list[str]]
) -> JsonDict:
    """The REQUEST authorizer event of a ``$connect`` (``type``, ``methodArn``, headers, query string)."""
    single, multi = _header_views(headers)
    return {
        "type": "REQUEST",
        "methodArn": api.method_arn(CONNECT_ROUTE),
        "headers": single,
        "multiValueHeaders": multi,
        **_query_views(query),
        "stageVariables": {},
        "requestContext": _request_context(api, conn, route_key=CONNECT_ROUTE, event_type="CONNECT"),
    }


def connect_event(
    api: ApiIdentity, conn: ConnectionInfo, *, headers: Mapping[str, str], query: Mapping[str, list[str]]
) -> JsonDict:
    """The ``$connect`` route's event, with the authorizer's context under ``requestContext.authorizer``."""
    single, multi = _header_views(headers)
    context = _request_context(api, conn, route_key=CONNECT_ROUTE, event_type="CONNECT")
    if conn.authorizer:
        context["authorizer"] = dict(conn.authorizer)
    return {
        "headers": single,
        "multiValueHeaders": multi,
        **_query_views(query),
        "requestContext": context,
        "isBase64Encoded": False,
    }


def message_event(api: ApiIdentity, conn: ConnectionInfo, *, route_key: str, data: str | bytes) -> JsonDict:
    """A ``MESSAGE`` event: a text frame's body as is; a binary frame's body base64 with ``isBase64Encoded``."""
    context = _request_context(api, conn, route_key=route_key, event_type="MESSAGE")
    context["messageId"] = uuid.uuid4().hex[:16] + "="
    if conn.authorizer:
        context["authorizer"] = dict(conn.authorizer)
    if isinstance(data, bytes):
        return {"requestContext": context, "body": base64.b64encode(data).decode("ascii"), "isBase64Encoded": True}
    return {"requestContext": context, "body": data, "isBase64Encoded": False}


def disconnect_event(api: ApiIdentity, conn: ConnectionInfo, *, status_code: int, reason: str) -> JsonDict:
    """The ``$disconnect`` event, with the close code and reason API Gateway reports."""
    context = _request_context(api, conn, route_key=DISCONNECT_ROUTE, event_type="DISCONNECT")
    context["disconnectStatusCode"] = status_code
    context["disconnectReason"] = reason
    if conn.authorizer:
        context["authorizer"] = dict(conn.authorizer)
    headers = {"Host": api.domain_name, "x-api-key": "", "X-Forwarded-For": "", "x-restapi": ""}
    single, multi = _header_views(headers)
    return {"headers": single, "multiValueHeaders": multi, "requestContext": context, "isBase64Encoded": False}


__all__ = [
    "CONNECT_ROUTE",
    "DEFAULT_ROUTE",
    "DISCONNECT_ROUTE",
    "ApiIdentity",
    "ConnectionInfo",
    "JsonDict",
    "authorizer_event",
    "connect_event",
    "disconnect_event",
    "message_event",
    "new_connection_id",
]
