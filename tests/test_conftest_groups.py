"""The suite's worker groups keep process-wide AWS state apart: every file whose tests use the session
``relay_stack`` runs in the process-env group, and there after the tests that start moto in-process."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
from tests.conftest import PROCESS_ENV_PATHS, STACK_FIXTURE, stack_users_last

ROOT = Path(__file__).resolve().parent.parent
USES_STACK = re.compile(rf"def \w+\([^)]*\b{STACK_FIXTURE}\b|getfixturevalue\(\"{STACK_FIXTURE}\"\)", re.DOTALL)


def test_every_file_that_uses_the_relay_stack_runs_in_the_process_env_group() -> None:
    users = sorted(
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "tests").rglob("test_*.py")
        if USES_STACK.search(path.read_text(encoding="utf-8"))
    )
    assert users, "no test uses the relay stack: the pattern is stale"
    outside = [path for path in users if not path.startswith(PROCESS_ENV_PATHS)]
    assert not outside, f"add these to tests/conftest.py PROCESS_ENV_PATHS: {outside}"


@dataclass
class _Item:
    nodeid: str
    fixturenames: tuple[str, ...]


def test_the_stack_users_run_after_every_other_test_each_side_in_its_order() -> None:
    items = [
        _Item("tests/cli/test_chat_opus.py::a", (STACK_FIXTURE,)),
        _Item("tests/functions/test_routes.py::b", ("aws",)),
        _Item("tests/local/test_relay_stack.py::c", (STACK_FIXTURE, "tmp_path")),
        _Item("tests/functions/test_routes.py::d", ()),
    ]
    ordered: list[Any] = list(items)
    stack_users_last(cast(list[pytest.Item], ordered))
    assert [item.nodeid.rsplit("::", 1)[1] for item in ordered] == ["b", "d", "a", "c"]
