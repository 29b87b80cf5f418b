"""The SSE response of a turn: events made on the agent's worker loop, sent on the server's loop, and the turn
stopped the moment the caller goes away.

``BedrockAgentCoreApp`` runs the entry point on a worker event loop of its own. Left to the app, a streamed reply
is bridged to the server through a thread blocked on a queue, and a caller who disconnects is never noticed: the
turn goes on generating and synthesizing for nobody until its queue fills. So the entry point returns this
response instead (the app passes a ``Response`` through unchanged). It:

- runs the producer (the turn's events, as SSE) as a task on the worker loop, awaiting each write on the server
  loop, so a slow caller slows the turn down instead of filling memory;
- listens on the server loop for ``http.disconnect``; when it comes, it cancels the producer task, whose
  ``finally`` cancels the turn and waits until the model has stopped and the TTS session is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Callable
from typing import Any

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from relay_core.fields import encode_json
from relay_core.sse import encode_sse

logger = logging.getLogger(__name__)

SSE_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


class EventStreamResponse(Response):
    """Streams ``events()`` (JSON objects) as SSE ``data:`` lines; ``events`` runs on ``loop``."""

    media_type = "text/event-stream"

    def __init__(self, events: Callable[[], AsyncGenerator[dict[str, Any]]], *, loop: asyncio.AbstractEventLoop):
        super().__init__(status_code=200)
        self._events = events
        self._loop = loop
        self.disconnected = False
        """Whether the caller went away before the last event was sent."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server_loop = asyncio.get_running_loop()
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})

        async def send_body(body: bytes) -> None:  # runs on the server loop
            await send({"type": "http.response.body", "body": body, "more_body": True})

        async def write(body: bytes) -> None:  # runs on the worker loop
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(send_body(body), server_loop))

        async def produce() -> None:  # runs on the worker loop
            async with contextlib.aclosing(self._events()) as events:
                async for event in events:
                    await write(encode_sse(encode_json(event)))

        producer = asyncio.wrap_future(asyncio.run_coroutine_threadsafe(produce(), self._loop))
        disconnect = asyncio.create_task(_disconnected(receive))
        await asyncio.wait({producer, disconnect}, return_when=asyncio.FIRST_COMPLETED)
        if not producer.done():
            self.disconnected = True
            logger.info("the caller went away mid-turn: stopping the turn")
            producer.cancel()  # cancels the task on the worker loop; its finally stops the turn
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({producer})
            return
        disconnect.cancel()
        error = producer.exception()
        if error is not None:
            logger.error("the event stream failed", exc_info=error)
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


__all__ = ["EventStreamResponse"]
