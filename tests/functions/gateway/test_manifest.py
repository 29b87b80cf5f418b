"""relay_functions.manifest declares every gateway function once; the handlers, ``$default``, the settings module
and the local stack's wiring all agree with it."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from pathlib import Path

from relay_core.client.messages import ClientAction
from relay_functions import manifest
from relay_functions.gateway import default, settings
from relay_local.gateway_functions import GatewayFunctions
from relay_local.relay_stack import ROUTE_FIELDS


def test_every_declared_function_has_its_handler() -> None:
    for function in manifest.FUNCTIONS:
        module_name, _, attribute = function.handler.rpartition(".")
        assert callable(getattr(importlib.import_module(module_name), attribute)), function.handler


def test_every_client_action_has_exactly_one_route_and_default_serves_them_all() -> None:
    assert set(manifest.action_routes()) == {a.value for a in ClientAction}
    served = {message_type.__name__ for message_type in default.ROUTES}
    assert served == {"SendMessage", "Cancel", "Resume"}


def test_declared_settings_are_the_ones_the_settings_module_reads() -> None:
    source = Path(inspect.getfile(settings)).read_text(encoding="utf-8")
    declared = {name for function in manifest.FUNCTIONS for name in function.settings}
    assert all(f'"{name}"' in source for name in declared), declared


def test_the_local_stack_wires_the_manifest() -> None:
    assert [f.name for f in dataclasses.fields(GatewayFunctions)] == [f.name for f in manifest.FUNCTIONS]
    assert dict(ROUTE_FIELDS) == manifest.action_routes()
