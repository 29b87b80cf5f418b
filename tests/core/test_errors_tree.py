"""relay_core's exceptions live in one module, once each: a rejection raised by any parser is caught by the class
of the same name everywhere (issue 19: ``UnknownActionError`` was defined twice and the two did not catch each
other)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import relay_core
from relay_core import errors
from relay_core.agent import events as agent_events
from relay_core.client import messages as client_messages
from relay_core.errors import RelayError, UnknownActionError

CORE = Path(relay_core.__file__).parent


def test_an_unknown_action_is_the_same_error_for_the_agent_and_the_gateway() -> None:
    with pytest.raises(UnknownActionError) as agent:
        agent_events.parse_request({"action": "dance"})
    with pytest.raises(UnknownActionError) as gateway:
        client_messages.parse_client_message({"action": "dance"})
    assert agent.value.code == gateway.value.code == "unknown_action"
    assert agent_events.UnknownActionError is errors.UnknownActionError


def test_every_exception_class_of_relay_core_is_defined_in_errors_py() -> None:
    defined_elsewhere = [
        f"{path.relative_to(CORE)}: {line.strip()}"
        for path in CORE.rglob("*.py")
        if path.name != "errors.py"
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.startswith("class ") and ("Error)" in line or "Exception)" in line)
    ]
    assert defined_elsewhere == []
    tree = [c for _, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, Exception)]
    assert all(issubclass(c, RelayError) for c in tree), "one tree: every relay_core error is a RelayError"
