"""Test-only stand-ins: an in-memory AgentCore control plane (moto has none), and a crash injector for task
functions (a Lambda that dies half-way, as a timeout or an out-of-memory would)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from relay_functions.ops.agent_runtimes import DEFAULT_ENDPOINT, RuntimeEndpoint


@dataclass
class FakeRuntime:
    status: str = "READY"
    endpoints: dict[str, str] = field(default_factory=lambda: {DEFAULT_ENDPOINT: "READY"})
    polls_until_gone: int = 0
    """Status reads a DELETING runtime (or endpoint) answers before it is gone."""
    never_goes: bool = False


class InMemoryAgentRuntimes:
    """:class:`relay_functions.ops.agent_runtimes.AgentRuntimeControl` in memory. Deletion is asynchronous, as in
    AgentCore: a deleted runtime or endpoint is ``DELETING`` for ``polls_until_gone`` status reads."""

    def __init__(self) -> None:
        self.runtimes: dict[str, FakeRuntime] = {}
        self.calls: list[str] = []
        self._countdown: dict[str, int] = {}

    def add(self, runtime_id: str, **kwargs: Any) -> FakeRuntime:
        self.runtimes[runtime_id] = FakeRuntime(**kwargs)
        return self.runtimes[runtime_id]

    def _tick(self, key: str) -> bool:
        """One status read of something DELETING; True once it is gone."""
        self._countdown[key] = self._countdown.get(key, 0) - 1
        return self._countdown[key] < 0

    def runtime_status(self, runtime_id: str) -> str | None:
        runtime = self.runtimes.get(runtime_id)
        if runtime is None:
            return None
        if runtime.status == "DELETING" and not runtime.never_goes and self._tick(runtime_id):
            del self.runtimes[runtime_id]
            return None
        return runtime.status

    def endpoints(self, runtime_id: str) -> list[RuntimeEndpoint]:
        runtime = self.runtimes.get(runtime_id)
        if runtime is None:
            return []
        for name, status in list(runtime.endpoints.items()):
            if status == "DELETING" and self._tick(f"{runtime_id}/{name}"):
                del runtime.endpoints[name]
        return [RuntimeEndpoint(n, s) for n, s in runtime.endpoints.items()]

    def delete_endpoint(self, runtime_id: str, name: str) -> None:
        self.calls.append(f"delete_endpoint {name}")
        runtime = self.runtimes.get(runtime_id)
        if runtime is not None and name in runtime.endpoints:
            runtime.endpoints[name] = "DELETING"
            self._countdown[f"{runtime_id}/{name}"] = runtime.polls_until_gone

    def delete_runtime(self, runtime_id: str) -> None:
        self.calls.append("delete_runtime")
        runtime = self.runtimes.get(runtime_id)
        if runtime is None:
            return
        if any(n != DEFAULT_ENDPOINT for n in runtime.endpoints):
            raise AssertionError("the runtime was deleted while it still had endpoints")
        runtime.status = "DELETING"
        self._countdown[runtime_id] = runtime.polls_until_gone


class InjectedCrashError(RuntimeError):
    """The task function died (what a timeout or an out-of-memory kill looks like to the workflow)."""


def crash_first_call(handler: Callable[[dict[str, Any], object], Any]) -> Callable[[dict[str, Any], object], Any]:
    """``handler``, except that its first call dies before doing anything."""
    calls = {"n": 0}

    def wrapped(event: dict[str, Any], context: object) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise InjectedCrashError("the task function was killed half-way (injected by the test)")
        return handler(event, context)

    return wrapped
