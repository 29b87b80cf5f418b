"""The local voice stack: the TTS container app and the agent app, each on a free loopback port.

``VoiceStack`` starts whichever of the two the caller did not point at (``tts_url`` / ``agent_url``), waits
until the TTS model is loaded (``/ping`` 200), and stops what it started. The same code AWS runs sits above
it; only the data planes differ (ARCHITECTURE "AWS ↔ local").
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from types import TracebackType

import httpx

from kokoro_server.app import create_app as create_tts_app
from relay_core.tts_messages import SESSION_PATH
from relay_local.servers import BackgroundServer, ServerStartError
from voice_agent.app import create_app as create_agent_app
from voice_agent.config import AgentConfig, ModelKind

TTS_WS_PATH = SESSION_PATH
MODEL_LOAD_TIMEOUT_S = 180.0


def wait_until_ready(
    http_url: str,
    *,
    timeout_s: float = MODEL_LOAD_TIMEOUT_S,
    poll_s: float = 0.1,
    alive: Callable[[], bool] = lambda: True,
) -> None:
    """Block until ``GET {http_url}/ping`` answers 200 (the TTS model is loaded), checking every ``poll_s``.
    ``alive`` (e.g. "the server process still runs") failing ends the wait at once with ``ServerStartError``."""
    deadline = time.monotonic() + timeout_s
    last = "no answer"
    while time.monotonic() < deadline:
        if not alive():
            raise ServerStartError(f"the server behind {http_url} stopped before /ping answered 200 (last: {last})")
        try:
            response = httpx.get(f"{http_url}/ping", timeout=2.0)
        except httpx.HTTPError as exc:
            last = repr(exc)
        else:
            if response.status_code == 200:
                return
            last = f"HTTP {response.status_code}"
        time.sleep(poll_s)
    raise ServerStartError(f"{http_url}/ping did not answer 200 within {timeout_s:.0f} s (last: {last})")


class VoiceStack:
    """TTS container + agent on loopback. Use as a context manager (blocking start/stop)."""

    def __init__(
        self,
        *,
        tts_url: str | None = None,
        agent_url: str | None = None,
        agent_config: AgentConfig | None = None,
    ) -> None:
        self._given_tts_url = tts_url
        self._given_agent_url = agent_url
        self._agent_config = agent_config or AgentConfig(model=ModelKind.SPEAK)
        self._servers: list[BackgroundServer] = []
        self.tts_url = tts_url or ""
        self.agent_url = agent_url or ""

    def start(self) -> VoiceStack:
        try:
            if self._given_agent_url is None:
                if self._given_tts_url is None:
                    tts = BackgroundServer(create_tts_app(), name="kokoro").start()
                    self._servers.append(tts)
                    wait_until_ready(tts.http_url)
                    self.tts_url = tts.ws_url + TTS_WS_PATH
                config = dataclasses.replace(self._agent_config, tts_url=self.tts_url)
                agent = BackgroundServer(create_agent_app(config), name="agent").start()
                self._servers.append(agent)
                self.agent_url = agent.http_url
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        while self._servers:
            self._servers.pop().stop()

    def __enter__(self) -> VoiceStack:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


__all__ = ["MODEL_LOAD_TIMEOUT_S", "TTS_WS_PATH", "VoiceStack", "wait_until_ready"]
