"""relay_core imports nothing outside the standard library (every deployable, Lambda included, can use it)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import relay_core

CORE = Path(relay_core.__file__).parent


def _imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_relay_core_imports_only_the_standard_library_and_itself() -> None:
    files = sorted(CORE.rglob("*.py"))
    assert len(files) > 10
    outside = {
        f"{path.relative_to(CORE)}: {root}"
        for path in files
        for root in _imported_roots(path)
        if root not in sys.stdlib_module_names and root not in {"relay_core", "__future__"}
    }
    assert outside == set()


def test_the_check_sees_a_third_party_import(tmp_path: Path) -> None:
    sample = tmp_path / "m.py"
    sample.write_text("import os\nfrom pydantic import BaseModel\nfrom . import x\n")
    assert _imported_roots(sample) - set(sys.stdlib_module_names) == {"pydantic"}
