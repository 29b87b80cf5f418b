"""Fixtures of the ops workflow tests: moto with the state machine executor on, the real task handlers in-process,
and the definitions with every placeholder substituted by test values."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from relay_functions.ops.placeholders import PLACEHOLDERS, definition_path, substitute
from relay_local.ops_workflows import REGION, InProcessLambdas, default_handlers, local_aws, local_values

REPO_ROOT = Path(__file__).resolve().parents[3]

TEST_VALUES: dict[str, str] = local_values()
assert TEST_VALUES.keys() == PLACEHOLDERS.keys()


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """moto (Step Functions executing definitions, Lambda without Docker) with fake credentials."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
    }.items():
        monkeypatch.setenv(name, value)
    with local_aws():
        yield


@pytest.fixture
def lambdas(aws: None) -> Iterator[InProcessLambdas]:
    """The real task handlers behind every function ARN of :data:`TEST_VALUES`."""
    with InProcessLambdas(default_handlers()) as runtime:
        yield runtime


@pytest.fixture
def definition() -> Callable[..., str]:
    """``definition("cleanup", DeleteMaxPolls="2")``: a workflow's definition with test values substituted."""

    def load(workflow: str, **overrides: str) -> str:
        return substitute(definition_path(workflow, REPO_ROOT).read_text(), {**TEST_VALUES, **overrides})

    return load
