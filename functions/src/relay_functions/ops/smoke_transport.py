"""What the Kokoro smoke check needs of a transport, and nothing else: a TTS session (:class:`SessionConnection`)
and ``POST /invocations`` (:data:`InvocationStream`).

The check (:mod:`relay_functions.ops.smoke_kokoro`) is written against these; the transports implement them —
:mod:`relay_functions.ops.smoke_local` (a plain WebSocket and urllib) and :mod:`relay_functions.ops.smoke_aws` (the
SageMaker bidirectional SDK and ``invoke_endpoint_with_response_stream``) — so neither transport imports the check.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol


class SessionClosedError(Exception):
    """The session's stream ended; ``clean`` after a normal close (WebSocket 1000 / end of the SageMaker body)."""

    def __init__(self, message: str, *, clean: bool) -> None:
        super().__init__(message)
        self.clean = clean


class SessionConnection(Protocol):
    async def send_binary(self, frame: bytes) -> None: ...

    async def receive(self) -> str | bytes:
        """The next server frame; raises :class:`SessionClosedError` when the stream ends."""
        ...

    async def aclose(self) -> None: ...


InvocationStream = Callable[[bytes], Iterator[bytes]]
"""POST /invocations with a JSON body; yields the response body in transport chunks."""


__all__ = ["InvocationStream", "SessionClosedError", "SessionConnection"]
