"""The interface a stand-in offers to be served on the one local AWS endpoint (one HTTP server for every AWS API
the relay's functions call, as their paths never overlap)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from starlette.routing import BaseRoute


class RoutedService(Protocol):
    """A local AWS API as HTTP routes (the Bedrock runtime, the dev user pool's JWKS, ...): the server that mounts
    them knows nothing else of the stand-in behind them."""

    def routes(self) -> Sequence[BaseRoute]:
        """The service's routes; their paths overlap no other service's."""
        ...


__all__ = ["RoutedService"]
