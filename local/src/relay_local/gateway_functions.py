"""The relay's Lambda functions as the local stack wires them: which handler serves which WebSocket route, and the
function names the Lambda Invoke endpoint knows them by (the relay is started by name, ``RELAY_FUNCTION_NAME``).

The real handlers live in ``relay_functions.gateway.<name>.handler``; :func:`load_gateway_functions` imports them
(after the stack has set the environment they read). Tests may pass other callables with the same signature.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass

from relay_functions import manifest
from relay_local.gateway.websocket_api import Handler, RouteHandlers


@dataclass(frozen=True)
class GatewayFunctions:
    """One handler per function of :data:`relay_functions.manifest.FUNCTIONS`, keyed by the function's name (its
    module in ``relay_functions.gateway``). Built from the manifest, so a new client action needs nothing here."""

    handlers: Mapping[str, Handler]

    def __post_init__(self) -> None:
        declared = set(manifest.by_name())
        if set(self.handlers) != declared:
            missing = sorted(declared - set(self.handlers))
            unknown = sorted(set(self.handlers) - declared)
            raise ValueError(
                f"GatewayFunctions needs one handler per function of relay_functions.manifest: missing {missing}, "
                f"not in the manifest {unknown}"
            )

    def function_names(self) -> dict[str, str]:
        """Function (module) name → the deployed function's name (``kokoro-relay-send-message``, ...)."""
        return {f.name: f.function_name for f in manifest.FUNCTIONS}

    def by_function_name(self) -> dict[str, Handler]:
        """Function name → handler, for the Lambda Invoke endpoint."""
        return {name: self.handlers[module] for module, name in self.function_names().items()}

    def route_handlers(self) -> RouteHandlers:
        """The WebSocket API's wiring: every route of the manifest to its function's handler."""
        routes = manifest.routes()
        return RouteHandlers(
            authorizer=self.handlers[manifest.AUTHORIZER],
            routes={route: self.handlers[f.name] for route, f in routes.items()},
            function_names={
                "authorizer": manifest.by_name()[manifest.AUTHORIZER].function_name,
                **{route: f.function_name for route, f in routes.items()},
            },
        )

    @property
    def relay_function_name(self) -> str:
        return manifest.by_name()[manifest.RELAY].function_name


class GatewayFunctionsMissingError(ImportError):
    """A ``relay_functions.gateway`` handler module is not there (yet)."""


def reset_function_state() -> None:
    """Forget the functions' per-process settings and clients (as a fresh Lambda execution environment would), so
    they read the environment the stack has just set. No-op when relay_functions is not installed."""
    try:
        deps = importlib.import_module(f"{manifest.HANDLER_PACKAGE}.deps")
        settings = importlib.import_module(f"{manifest.HANDLER_PACKAGE}.settings")
    except ModuleNotFoundError:
        return
    deps.set_process_deps(None)
    settings.load_settings.cache_clear()


def load_gateway_functions() -> GatewayFunctions:
    """Import the real handlers: ``relay_functions.gateway.<name>.handler`` for every function."""
    handlers: dict[str, Handler] = {}
    for f in manifest.FUNCTIONS:
        module_name = f"{manifest.HANDLER_PACKAGE}.{f.name}"
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            raise GatewayFunctionsMissingError(
                f"{module_name} does not exist: the local stack runs the real gateway functions; install "
                "relay-functions (uv sync --all-packages) or pass handlers= to RelayStack"
            ) from exc
        handlers[f.name] = module.handler
    return GatewayFunctions(handlers)


__all__ = [
    "GatewayFunctions",
    "GatewayFunctionsMissingError",
    "load_gateway_functions",
    "reset_function_state",
]
