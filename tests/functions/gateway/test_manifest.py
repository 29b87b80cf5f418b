"""relay_functions.manifest declares every gateway function once; the handlers, ``$default``, the settings module
and the local stack's wiring all agree with it."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest

from relay_core.client.messages import ClientAction
from relay_functions import manifest
from relay_functions.gateway import default, settings
from relay_local.gateway_functions import GatewayFunctions, load_gateway_functions


def test_every_declared_function_has_its_handler() -> None:
    for function in manifest.FUNCTIONS:
        module_name, _, attribute = function.handler.rpartition(".")
        assert callable(getattr(importlib.import_module(module_name), attribute)), function.handler


def test_every_client_action_has_exactly_one_route_and_default_serves_them_all() -> None:
    assert set(manifest.action_routes()) == {a.value for a in ClientAction}
    served = {message_type.__name__ for message_type in default.ROUTES}
    assert served == {"SendMessage", "Cancel", "Resume", "NewConversation"}


def test_declared_settings_are_the_ones_the_settings_module_reads() -> None:
    source = Path(inspect.getfile(settings)).read_text(encoding="utf-8")
    declared = {name for function in manifest.FUNCTIONS for name in function.settings}
    assert all(f'"{name}"' in source for name in declared), declared


def test_the_local_stack_wires_the_manifest() -> None:
    functions = load_gateway_functions()
    wiring = functions.route_handlers()
    assert set(wiring.routes) == set(manifest.routes())  # every route, $-routes and client actions
    for route, function in manifest.routes().items():
        assert wiring.routes[route] is functions.handlers[function.name]
        assert wiring.function_names[route] == function.function_name
    assert wiring.authorizer is functions.handlers[manifest.AUTHORIZER]
    assert set(functions.by_function_name()) == {f.function_name for f in manifest.FUNCTIONS}


def test_the_local_stack_refuses_handlers_that_do_not_match_the_manifest() -> None:
    handlers = dict(load_gateway_functions().handlers)
    handlers["shout"] = handlers.pop("cancel")
    with pytest.raises(ValueError, match=r"missing \['cancel'\], not in the manifest \['shout'\]"):
        GatewayFunctions(handlers)
