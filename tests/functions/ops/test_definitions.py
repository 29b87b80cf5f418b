"""Static checks of every state machine definition: placeholders all declared and all substituted, every state
reachable, every Task guarded (Catch; Lambda tasks also Retry on Lambda's transient errors), no dangling Next."""

from __future__ import annotations

import json
from typing import Any

import pytest

from relay_functions.ops.placeholders import (
    FUNCTION_HANDLERS,
    PLACEHOLDERS,
    STATE_MACHINES,
    UnknownPlaceholderError,
    definition_path,
    placeholders_in,
    substitute,
)
from relay_local.ops_workflows import load_handler

from .conftest import REPO_ROOT, TEST_VALUES

LAMBDA_TRANSIENT = {"Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException"}


def states_of(workflow: str) -> tuple[str, dict[str, dict[str, Any]]]:
    document = json.loads(substitute(definition_path(workflow, REPO_ROOT).read_text(), TEST_VALUES))
    assert document["QueryLanguage"] == "JSONPath"  # moto executes JSONPath only
    return document["StartAt"], document["States"]


def successors(state: dict[str, Any]) -> set[str]:
    found = {state[k] for k in ("Next", "Default") if k in state}
    found |= {c["Next"] for c in state.get("Choices", [])}
    found |= {c["Next"] for c in state.get("Catch", [])}
    return found


@pytest.mark.parametrize("workflow", sorted(STATE_MACHINES))
def test_every_placeholder_is_declared_and_substituted(workflow: str) -> None:
    text = definition_path(workflow, REPO_ROOT).read_text()
    assert placeholders_in(text) <= PLACEHOLDERS.keys()
    assert "${" not in substitute(text, TEST_VALUES)


@pytest.mark.parametrize("workflow", sorted(STATE_MACHINES))
def test_every_state_is_reachable_and_every_transition_lands(workflow: str) -> None:
    start, states = states_of(workflow)
    seen, todo = set(), [start]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        assert name in states, f"{workflow}: a transition goes to {name!r}, which does not exist"
        seen.add(name)
        todo.extend(successors(states[name]))
    assert seen == set(states), f"{workflow}: unreachable: {sorted(set(states) - seen)}"
    for name, state in states.items():
        terminal = state["Type"] in ("Succeed", "Fail") or state.get("End") is True
        assert terminal or "Next" in state or state["Type"] == "Choice", f"{workflow}.{name} leads nowhere"
        if state["Type"] == "Fail":
            assert {"Error", "ErrorPath"} & state.keys() and {"Cause", "CausePath"} & state.keys()


@pytest.mark.parametrize("workflow", sorted(STATE_MACHINES))
def test_every_task_is_guarded(workflow: str) -> None:
    _, states = states_of(workflow)
    tasks = {name: s for name, s in states.items() if s["Type"] == "Task"}
    assert tasks
    for name, task in tasks.items():
        catches = [error for c in task.get("Catch", []) for error in c["ErrorEquals"]]
        assert "States.ALL" in catches, f"{workflow}.{name} has no Catch for States.ALL"
        if task["Resource"] == "arn:aws:states:::lambda:invoke":
            retried = {error for r in task.get("Retry", []) for error in r["ErrorEquals"]}
            assert retried >= LAMBDA_TRANSIENT, f"{workflow}.{name} does not retry Lambda's transient errors"


@pytest.mark.parametrize("workflow", sorted(STATE_MACHINES))
def test_tasks_use_only_integrations_moto_executes(workflow: str) -> None:
    _, states = states_of(workflow)
    for name, state in states.items():
        if state["Type"] == "Task":
            resource = state["Resource"]
            assert resource == "arn:aws:states:::lambda:invoke" or resource.startswith(
                ("arn:aws:states:::aws-sdk:sagemaker:", "arn:aws:states:::aws-sdk:s3:", "arn:aws:states:::sns:publish")
            ), f"{workflow}.{name}: {resource} is not executed by moto in the tests"


def test_every_task_function_placeholder_names_a_handler_that_exists() -> None:
    assert set(FUNCTION_HANDLERS) == {name for name in PLACEHOLDERS if name.endswith("FunctionArn")}
    for handler in FUNCTION_HANDLERS.values():
        assert callable(load_handler(handler))
    used = "".join(definition_path(w, REPO_ROOT).read_text() for w in STATE_MACHINES)
    assert {name for name in FUNCTION_HANDLERS if f"${{{name}}}" in used} == set(FUNCTION_HANDLERS)


def test_substitute_names_unknown_and_missing_placeholders() -> None:
    with pytest.raises(UnknownPlaceholderError, match="NoSuchThing"):
        substitute("${NoSuchThing}", {})
    with pytest.raises(UnknownPlaceholderError, match="no value given for: EndpointName"):
        substitute('{"a": "${EndpointName}"}', {})
