"""``$default``: a message whose ``action`` matched no route. It answers ``error unknown_action`` naming the valid
actions (or ``invalid_json`` for a frame that is not JSON). A message with a valid action that reaches it
anyway (a route missing from a deployment) is served as that route would serve it.
"""

from __future__ import annotations

import importlib

from relay_core.client.messages import ClientMessage
from relay_functions import manifest
from relay_functions.gateway.lambda_handler import action_handler
from relay_functions.gateway.route_event import Route


def _action_routes() -> dict[type[ClientMessage], Route]:
    """Every client action's route, from the manifest (each action's module exports its ``ROUTES``)."""
    routes: dict[type[ClientMessage], Route] = {}
    for module in manifest.action_routes().values():
        routes.update(importlib.import_module(f"{manifest.HANDLER_PACKAGE}.{module}").ROUTES)
    return routes


ROUTES: dict[type[ClientMessage], Route] = _action_routes()


handler = action_handler(__name__, ROUTES)
