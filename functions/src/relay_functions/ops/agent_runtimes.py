"""The AgentCore control plane, behind a small interface (moto has no ``bedrock-agentcore-control``).

:class:`AgentRuntimeControl` is all the cleanup needs: a runtime's status, its endpoints, and deleting either.
:class:`Boto3AgentRuntimes` implements it with boto3 (tested with botocore's Stubber); the workflow tests use an
in-memory implementation that lives in the tests. "Not found" is reported as ``None`` / ignored, never raised.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Protocol

import boto3
from botocore.exceptions import ClientError

DEFAULT_ENDPOINT: Final = "DEFAULT"
"""The endpoint AgentCore creates with every runtime; it goes away with the runtime itself."""
_NOT_FOUND: Final = "ResourceNotFoundException"


@dataclass(frozen=True, slots=True)
class RuntimeEndpoint:
    name: str
    status: str


class AgentRuntimeControl(Protocol):
    def runtime_status(self, runtime_id: str) -> str | None:
        """``READY``, ``DELETING``, ``DELETE_FAILED``, ...; ``None`` when the runtime does not exist."""
        ...

    def endpoints(self, runtime_id: str) -> list[RuntimeEndpoint]:
        """The runtime's endpoints (empty when the runtime does not exist)."""
        ...

    def delete_endpoint(self, runtime_id: str, name: str) -> None:
        """Ask for an endpoint's deletion (nothing happens when it is already gone)."""
        ...

    def delete_runtime(self, runtime_id: str) -> None:
        """Ask for the runtime's deletion (nothing happens when it is already gone)."""
        ...


class Boto3AgentRuntimes:
    """:class:`AgentRuntimeControl` over boto3's ``bedrock-agentcore-control`` client."""

    def __init__(self, client: Any | None = None) -> None:
        self._client = client if client is not None else boto3.client("bedrock-agentcore-control")

    def runtime_status(self, runtime_id: str) -> str | None:
        try:
            return str(self._client.get_agent_runtime(agentRuntimeId=runtime_id)["status"])
        except ClientError as exc:
            if exc.response["Error"]["Code"] == _NOT_FOUND:
                return None
            raise

    def endpoints(self, runtime_id: str) -> list[RuntimeEndpoint]:
        found: list[RuntimeEndpoint] = []
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"agentRuntimeId": runtime_id}
            if token:
                kwargs["nextToken"] = token
            try:
                page = self._client.list_agent_runtime_endpoints(**kwargs)
            except ClientError as exc:
                if exc.response["Error"]["Code"] == _NOT_FOUND:
                    return []
                raise
            found += [RuntimeEndpoint(str(e["name"]), str(e["status"])) for e in page.get("runtimeEndpoints", [])]
            token = page.get("nextToken")
            if not token:
                return found

    def delete_endpoint(self, runtime_id: str, name: str) -> None:
        try:
            self._client.delete_agent_runtime_endpoint(agentRuntimeId=runtime_id, endpointName=name)
        except ClientError as exc:
            if exc.response["Error"]["Code"] != _NOT_FOUND:
                raise

    def delete_runtime(self, runtime_id: str) -> None:
        try:
            self._client.delete_agent_runtime(agentRuntimeId=runtime_id)
        except ClientError as exc:
            if exc.response["Error"]["Code"] != _NOT_FOUND:
                raise


def make_control() -> AgentRuntimeControl:
    """The control plane the task functions use (boto3; tests replace this factory)."""
    return Boto3AgentRuntimes()


__all__ = ["DEFAULT_ENDPOINT", "AgentRuntimeControl", "Boto3AgentRuntimes", "RuntimeEndpoint", "make_control"]
