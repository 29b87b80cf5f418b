"""The web client's origin in local mode: the static files of ``web/``, ``/config.json`` (where the gateway is,
a dev token, where the agent is) and ``/agent/invocations``, a streaming (unbuffered) proxy to the agent app so
the page can also talk to the agent directly without cross-origin requests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from relay_core.agent.events import AGENTCORE_SESSION_HEADER

AGENT_PROXY_PATH = "/agent/invocations"
CLIENT_LIBRARY_PATH = "/client"
"""Where the page loads ``@kokoro-relay/client`` from: ``clients/js/src`` beside ``web/`` (``web/client`` is a
symlink to it, which StaticFiles would refuse to follow)."""
PROXIED_HEADERS = ("content-type", "accept", AGENTCORE_SESSION_HEADER.lower())


def create_web_app(*, web_dir: Path | None, agent_url: str, config: Callable[[], dict[str, Any]]) -> Starlette:
    """``config()`` is called per request of ``/config.json`` (so a fresh dev token is served each time)."""
    clients: list[httpx.AsyncClient] = []

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        clients.append(httpx.AsyncClient(timeout=httpx.Timeout(None)))
        try:
            yield
        finally:
            await clients.pop().aclose()

    async def config_json(_: Request) -> Response:
        return JSONResponse(config(), headers={"Cache-Control": "no-store"})

    async def agent_proxy(request: Request) -> Response:
        client = clients[0]
        headers = {k: v for k, v in request.headers.items() if k.lower() in PROXIED_HEADERS}
        upstream = client.build_request(
            "POST", f"{agent_url}/invocations", content=await request.body(), headers=headers
        )
        try:
            answer = await client.send(upstream, stream=True)
        except httpx.HTTPError as exc:
            return JSONResponse({"message": f"the local agent is unreachable: {exc!r}"}, status_code=502)

        async def body() -> AsyncIterator[bytes]:
            async for chunk in answer.aiter_raw():
                yield chunk

        return StreamingResponse(
            body(),
            status_code=answer.status_code,
            media_type=answer.headers.get("content-type"),
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            background=BackgroundTask(answer.aclose),
        )

    routes: list[BaseRoute] = [
        Route("/config.json", config_json, methods=["GET"]),
        Route(AGENT_PROXY_PATH, agent_proxy, methods=["POST"]),
    ]
    if web_dir is not None and web_dir.is_dir():
        library = web_dir.parent / "clients" / "js" / "src"
        if library.is_dir():
            routes.append(Mount(CLIENT_LIBRARY_PATH, StaticFiles(directory=library), name="client"))
        routes.append(Mount("/", StaticFiles(directory=web_dir, html=True), name="web"))
    return Starlette(routes=routes, lifespan=lifespan)


__all__ = ["AGENT_PROXY_PATH", "CLIENT_LIBRARY_PATH", "create_web_app"]
