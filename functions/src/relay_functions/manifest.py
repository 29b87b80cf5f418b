"""Every gateway function, declared once: its name, handler, route, the settings it reads and the AWS calls it needs.

A plain data module (no AWS, no CDK, no handler imports): the CDK app's gateway stack (``relay_infra.stacks.gateway``:
functions, routes, environment and IAM), the local stack (``relay_local.gateway_functions``,
``relay_local.relay_stack``), ``$default`` and the tests read it, so that a route, an environment variable or an IAM
action is written in one place. Adding a client action touches its message in ``relay_core.client.messages``, this
manifest, its handler module (with its ``ROUTES``) and its test.
"""

from __future__ import annotations

from dataclasses import dataclass

HANDLER_PACKAGE = "relay_functions.gateway"
FUNCTION_NAME_PREFIX = "kokoro-relay-"

CONNECT_ROUTE = "$connect"
DISCONNECT_ROUTE = "$disconnect"
DEFAULT_ROUTE = "$default"

MANAGE_CONNECTIONS = "execute-api:ManageConnections"
INVOKE_AGENT = "bedrock-agentcore:InvokeAgentRuntime"


@dataclass(frozen=True, slots=True)
class GatewayFunction:
    """One Lambda function of the gateway."""

    name: str
    """The module in ``relay_functions.gateway`` (its handler is ``<module>.handler``)."""
    route: str | None
    """The WebSocket route it serves (``$connect``, ``sendMessage``, ...); None: not a route (the authorizer is
    attached to ``$connect``; the relay is invoked asynchronously by ``sendMessage``)."""
    settings: tuple[str, ...]
    """The environment variables it reads (``relay_functions.gateway.settings``)."""
    aws_calls: tuple[str, ...]
    """The IAM actions it needs (resources: docs/functions.md, IAM)."""

    @property
    def handler(self) -> str:
        """The handler's import path, as Lambda's ``Handler`` setting spells it."""
        return f"{HANDLER_PACKAGE}.{self.name}.handler"

    @property
    def function_name(self) -> str:
        """The function's name locally (``kokoro-relay-send-message``)."""
        return FUNCTION_NAME_PREFIX + self.name.replace("_", "-")


_COMMON = ("CONNECTIONS_TABLE", "CONNECTIONS_ENDPOINT_URL", "POWERTOOLS_SERVICE_NAME", "POWERTOOLS_METRICS_NAMESPACE")
_TABLES = ("dynamodb:GetItem", "dynamodb:UpdateItem")
_STARTS_TURNS = ("TURNS_TABLE", "RELAY_FUNCTION_NAME", "TURNS_PER_MINUTE")

FUNCTIONS: tuple[GatewayFunction, ...] = (
    GatewayFunction(
        "authorizer",
        None,
        ("JWT_ISSUER", "JWT_AUDIENCE", "JWKS_URL", "POWERTOOLS_SERVICE_NAME", "POWERTOOLS_METRICS_NAMESPACE"),
        (),
    ),
    GatewayFunction(
        "connect", CONNECT_ROUTE, (*_COMMON, "CONNECTION_TTL_S"), ("dynamodb:PutItem", "dynamodb:UpdateItem")
    ),
    GatewayFunction(
        "disconnect", DISCONNECT_ROUTE, (*_COMMON, "TURNS_TABLE"), ("dynamodb:DeleteItem", "dynamodb:UpdateItem")
    ),
    GatewayFunction(
        "default",
        DEFAULT_ROUTE,
        (*_COMMON, *_STARTS_TURNS, "RESUME_WINDOW_S"),
        (*_TABLES, "dynamodb:PutItem", "lambda:InvokeFunction", MANAGE_CONNECTIONS),
    ),
    GatewayFunction(
        "send_message",
        "sendMessage",
        (*_COMMON, *_STARTS_TURNS),
        (*_TABLES, "dynamodb:PutItem", "lambda:InvokeFunction", MANAGE_CONNECTIONS),
    ),
    GatewayFunction(
        "cancel",
        "cancel",
        (*_COMMON, "TURNS_TABLE", "RELAY_FUNCTION_NAME"),
        (*_TABLES, MANAGE_CONNECTIONS, "lambda:InvokeFunction"),
    ),
    GatewayFunction("resume", "resume", (*_COMMON, "TURNS_TABLE", "RESUME_WINDOW_S"), (*_TABLES, MANAGE_CONNECTIONS)),
    GatewayFunction("new_conversation", "newConversation", _COMMON, (*_TABLES, MANAGE_CONNECTIONS)),
    GatewayFunction(
        "relay",
        None,
        (
            *_COMMON,
            "TURNS_TABLE",
            "AGENT_RUNTIME_ARN",
            "AGENT_RUNTIME_QUALIFIER",
            "RESUME_WINDOW_S",
            "TEXT_COALESCE_MS",
        ),
        (*_TABLES, MANAGE_CONNECTIONS, INVOKE_AGENT),
    ),
    GatewayFunction(
        "relay_failed",
        None,
        (*_COMMON, "TURNS_TABLE", "RESUME_WINDOW_S"),
        (*_TABLES, MANAGE_CONNECTIONS),
    ),
)
"""The gateway's functions, in deployment order."""

AUTHORIZER = "authorizer"
"""The ``$connect`` route's request authorizer (not a route of its own)."""
RELAY = "relay"
"""The function ``sendMessage`` invokes asynchronously (its name is ``RELAY_FUNCTION_NAME``)."""
RELAY_FAILED = "relay_failed"
"""The relay's on-failure destination: Lambda hands it a relay invocation it gave up on (throttled past the
event's maximum age, or failed), and it ends that turn for the client."""


def by_name() -> dict[str, GatewayFunction]:
    return {f.name: f for f in FUNCTIONS}


def routes() -> dict[str, GatewayFunction]:
    """Route key → the function serving it (``$connect``, ``$disconnect``, ``$default`` and every client action)."""
    return {f.route: f for f in FUNCTIONS if f.route is not None}


def action_routes() -> dict[str, str]:
    """Client action (route key) → the function's module name: the routes that are not ``$``-routes."""
    return {route: f.name for route, f in routes().items() if not route.startswith("$")}


__all__ = [
    "AUTHORIZER",
    "CONNECT_ROUTE",
    "DEFAULT_ROUTE",
    "DISCONNECT_ROUTE",
    "FUNCTIONS",
    "FUNCTION_NAME_PREFIX",
    "HANDLER_PACKAGE",
    "RELAY",
    "RELAY_FAILED",
    "GatewayFunction",
    "action_routes",
    "by_name",
    "routes",
]
