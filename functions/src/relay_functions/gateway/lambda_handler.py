"""The one way a gateway function's Lambda handler is made, for every function of :mod:`relay_functions.manifest`.

:func:`gateway_handler` wraps a handler in what every function wears, in this order: thread-local log keys for the
invocation (:func:`~relay_functions.gateway.observability.log_invocation`), a Tracer segment, and the Metrics
flush. :func:`action_handler` is the whole handler of a route that serves client actions (``sendMessage``,
``cancel``, ``resume`` and ``$default``): the message is parsed and routed by
:func:`~relay_functions.gateway.route_event.handle_client_message` to the module's ``ROUTES``.

Both refuse, when the module is imported, a module the manifest does not declare: a function exists in the
manifest or not at all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from relay_core.client.messages import ClientMessage
from relay_functions import manifest
from relay_functions.gateway.deps import process_deps
from relay_functions.gateway.observability import log_invocation, metrics, tracer
from relay_functions.gateway.route_event import Route, handle_client_message

Handler = Callable[[dict[str, Any], LambdaContext], dict[str, Any]]

MADE: dict[str, Handler] = {}
"""Function name → the handler made for it here (every function of the manifest, once its module is imported)."""


def declared(module: str) -> manifest.GatewayFunction:
    """The manifest's entry for the handler module named ``module`` (its ``__name__``); a ``LookupError`` that
    says what to do when there is none."""
    package, _, name = module.rpartition(".")
    function = manifest.by_name().get(name)
    if package != manifest.HANDLER_PACKAGE or function is None:
        raise LookupError(f"{module} is not a function of relay_functions.manifest.FUNCTIONS: declare it there first")
    return function


def gateway_handler(module: str) -> Callable[[Handler], Handler]:
    """Decorate the handler of the function whose module is ``module`` (pass ``__name__``)."""
    function = declared(module)

    def wrap(handler: Handler) -> Handler:
        wrapped: Handler = log_invocation(tracer.capture_lambda_handler(metrics.log_metrics(handler)))
        MADE[function.name] = wrapped
        return wrapped

    return wrap


def action_handler(module: str, routes: dict[type[ClientMessage], Route]) -> Handler:
    """The handler of a route that serves client actions: each message type in ``routes`` goes to its route."""

    @gateway_handler(module)
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        return handle_client_message(event, process_deps(), routes)

    return handler


__all__ = ["MADE", "Handler", "action_handler", "declared", "gateway_handler"]
