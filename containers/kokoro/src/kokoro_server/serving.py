"""Serving the app under uvicorn: what ``kokoro-server`` and ``kokoro-server serve`` run once their settings are
read. A module of its own, imported when something is to be served, so that the commands that serve nothing
(``convert-weights``, ``--help``, a usage error) load neither uvicorn nor the app."""

from __future__ import annotations

import contextlib
import logging
import threading
from types import FrameType

import uvicorn

from kokoro_server.app import create_app
from kokoro_server.config import ServerConfig


class _Server(uvicorn.Server):
    """uvicorn's server that stops gracefully on the first SIGINT/SIGTERM and ignores the repeats: a terminal sends
    Ctrl-C to the whole process group (``uv run`` passes its copy on too), and uvicorn would turn a second one
    into a forced exit that cancels the shutdown mid-way (tracebacks, an unclean stop)."""

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if not self.should_exit:
            super().handle_exit(sig, frame)


def run(config: ServerConfig, *, log_level: str = "info") -> str | None:
    """Run the app under uvicorn until interrupted (Ctrl-C or SIGTERM, however often), with no traceback then.
    If the model fails to load the server stops: returns why (None when it stopped for any other reason)."""
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    app = create_app(config)
    state = app.state.server
    server = _Server(
        uvicorn.Config(app, host=config.host, port=config.port, log_level=log_level, ws="websockets-sansio")
    )

    def stop_if_the_load_fails() -> None:
        state.settled.wait()
        if state.load_error is not None:
            server.should_exit = True

    threading.Thread(target=stop_if_the_load_fails, name="kokoro-load-watch", daemon=True).start()
    # uvicorn re-raises the Ctrl-C it stopped on once it has stopped: the stop is done, and clean
    with contextlib.suppress(KeyboardInterrupt):
        server.run()
    load_error: str | None = state.load_error
    return load_error
