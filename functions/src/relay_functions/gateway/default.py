"""``$default``: a message whose ``action`` matched no route. It answers ``error unknown_action`` naming the valid
actions (or ``invalid_json`` for a frame that is not JSON). A message with a valid action that reaches it
anyway (a route missing from a deployment) is served as that route would serve it.
"""

from __future__ import annotations

import importlib
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from relay_core.client_messages import ClientMessage
from relay_functions import manifest
from relay_functions.gateway.deps import process_deps
from relay_functions.gateway.observability import log_invocation, metrics, tracer
from relay_functions.gateway.route_event import Route, handle_client_message


def _action_routes() -> dict[type[ClientMessage], Route]:
    """Every client action's route, from the manifest (each action's module exports its ``ROUTES``)."""
    routes: dict[type[ClientMessage], Route] = {}
    for module in manifest.action_routes().values():
        routes.update(importlib.import_module(f"{manifest.HANDLER_PACKAGE}.{module}").ROUTES)
    return routes


ROUTES: dict[type[ClientMessage], Route] = _action_routes()


@log_invocation
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle_client_message(event, process_deps(), ROUTES)
