"""Every gateway handler is made by the one factory, for a function the manifest declares, and wears the same
wrappers (log keys, Tracer, Metrics)."""

from __future__ import annotations

import importlib

import pytest

from relay_functions import manifest
from relay_functions.gateway import lambda_handler
from relay_functions.gateway.lambda_handler import action_handler, declared, gateway_handler


def test_every_function_of_the_manifest_has_the_handler_the_factory_made() -> None:
    for function in manifest.FUNCTIONS:
        module = importlib.import_module(f"{manifest.HANDLER_PACKAGE}.{function.name}")
        assert lambda_handler.MADE[function.name] is module.handler, function.name
        assert declared(module.__name__) is manifest.by_name()[function.name]


@pytest.mark.parametrize("module", ["relay_functions.gateway.dance", "elsewhere.cancel", "cancel"])
def test_a_function_the_manifest_does_not_declare_gets_no_handler(module: str) -> None:
    with pytest.raises(LookupError, match="declare it there first"):
        gateway_handler(module)
    with pytest.raises(LookupError, match="declare it there first"):
        action_handler(module, {})
