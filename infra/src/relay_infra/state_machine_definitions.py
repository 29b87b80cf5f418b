"""Reading statemachines/*.asl.json: the placeholders they use and the service integrations they call.

The definitions and their placeholder list belong to relay_functions.ops (``placeholders.py``); this module
only reads them so the Ops stack can substitute every placeholder and grant each state machine exactly the
integrations its definition calls.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relay_functions.ops import placeholders
from relay_infra.paths import STATEMACHINES_DIR

SDK_PREFIX = "arn:aws:states:::aws-sdk:"


@dataclass(frozen=True, slots=True)
class SdkCall:
    """One ``arn:aws:states:::aws-sdk:<service>:<action>`` task, as its IAM action (``service:Action``)."""

    service: str
    action: str

    @property
    def iam_action(self) -> str:
        service = {"bedrockagentcorecontrol": "bedrock-agentcore", "sfn": "states"}.get(self.service, self.service)
        return f"{service}:{self.action[:1].upper()}{self.action[1:]}"


def definition_text(workflow: str, directory: Path = STATEMACHINES_DIR) -> str:
    """The raw definition of ``workflow`` (a key of ``placeholders.STATE_MACHINES``)."""
    return (directory / placeholders.STATE_MACHINES[workflow]).read_text(encoding="utf-8")


def _states(definition: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for state in definition.get("States", {}).values():
        yield state
        for branch in state.get("Branches", []):
            yield from _states(branch)
        if "Iterator" in state:
            yield from _states(state["Iterator"])
        if "ItemProcessor" in state:
            yield from _states(state["ItemProcessor"])


def task_resources(text: str) -> set[str]:
    """Every Task ``Resource`` of a definition (nested Parallel/Map states included)."""
    definition = json.loads(text)
    return {state["Resource"] for state in _states(definition) if state.get("Type") == "Task"}


def sdk_calls(text: str) -> set[SdkCall]:
    """The AWS SDK integrations a definition calls."""
    calls = set()
    for resource in task_resources(text):
        if resource.startswith(SDK_PREFIX):
            service, _, action = resource.removeprefix(SDK_PREFIX).partition(":")
            calls.add(SdkCall(service, action.split(".", 1)[0]))
    return calls


def used_placeholders(text: str) -> set[str]:
    """The ``${Name}`` placeholders a definition uses."""
    return placeholders.placeholders_in(text)
