"""Run an ASGI app (the TTS container app, the agent app) on a free loopback port in a background thread.

Used by ``relay speak``, the tests and the benchmarks: each server gets its own thread and event loop, so the
caller's loop (the client) never shares a loop with the servers it measures. The port is bound before the
server starts (no race for a "free" port), and :meth:`BackgroundServer.stop` shuts it down and joins the thread.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import Coroutine
from types import TracebackType
from typing import Any, TypeVar

import uvicorn

logger = logging.getLogger(__name__)

T = TypeVar("T")


class ServerStartError(RuntimeError):
    """A background server did not come up; the message says which and why."""


class BackgroundServer:
    """An ASGI app served by uvicorn on ``host`` (loopback by default) at a free port."""

    def __init__(
        self, app: Any, *, name: str, host: str = "127.0.0.1", log_level: str = "warning", port: int = 0
    ) -> None:
        """``port`` 0 (the default) takes a free port; another value binds that one (``OSError`` if taken)."""
        self.name = name
        self.host = host
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind((host, port))
        self.port: int = self._socket.getsockname()[1]
        config = uvicorn.Config(
            app, log_level=log_level, lifespan="on", ws="websockets-sansio", ws_max_size=16 * 1024 * 1024
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, name=f"server-{name}", daemon=True)
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def http_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://{self.host}:{self.port}"

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # noqa: BLE001 - reported to the starting thread by start()
            self._error = exc

    def start(self, timeout_s: float = 30.0) -> BackgroundServer:
        """Start and wait until the server accepts connections (blocking; call via a thread from async code)."""
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if self._error is not None or not self._thread.is_alive():
                raise ServerStartError(f"the {self.name} server failed to start: {self._error!r}")
            if time.monotonic() > deadline:
                self.stop()
                raise ServerStartError(f"the {self.name} server did not start within {timeout_s:.0f} s")
            time.sleep(0.02)
        return self

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        await self._server.serve(sockets=[self._socket])

    def stop(self, timeout_s: float = 10.0) -> None:
        """Shut down (idempotent) and join the thread: gracefully for ``timeout_s`` (open requests may finish), then
        by force for as long again (uvicorn's forced exit, and every open connection closed: on Python 3.12 the
        shutdown otherwise waits for them whatever ``force_exit`` says); a server that still has not stopped is
        logged as an error rather than left running unsaid."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        if self._thread.is_alive():
            logger.warning("the %s server did not stop within %.0f s: forcing its exit", self.name, timeout_s)
            self._server.force_exit = True
            if self._loop is not None:
                self._loop.call_soon_threadsafe(self._close_connections)
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                logger.error("the %s server's thread still runs %.0f s after its forced exit", self.name, timeout_s)
        self._socket.close()

    def _close_connections(self) -> None:
        """On the server's loop: close every open connection's transport (its request tasks are then cancelled)."""
        for connection in list(self._server.server_state.connections):
            transport = getattr(connection, "transport", None)
            if transport is not None:
                transport.close()

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class LoopThread:
    """An asyncio event loop running on a daemon thread of its own, for a server that must not share a loop with
    anything else (the local API Gateway's WebSocket API). :meth:`run` executes a coroutine on it from any other
    thread and waits for its result; :meth:`stop` cancels what is left on the loop and joins the thread."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=f"loop-{name}", daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def start(self) -> LoopThread:
        self._thread.start()
        return self

    def run(self, coro: Coroutine[Any, Any, T], timeout_s: float | None = 30.0) -> T:
        """Run ``coro`` on this loop (blocking the calling thread, which must not be this loop's)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout_s)

    async def _cancel_leftovers(self) -> None:
        tasks = [t for t in asyncio.all_tasks(self.loop) if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def stop(self, timeout_s: float = 10.0) -> None:
        """Cancel the tasks still on the loop, stop it, join the thread and close the loop (idempotent)."""
        if not self._thread.is_alive():
            return
        try:
            self.run(self._cancel_leftovers(), timeout_s)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout_s)
            if not self._thread.is_alive():
                self.loop.close()


__all__ = ["BackgroundServer", "LoopThread", "ServerStartError"]
