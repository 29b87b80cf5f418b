"""What each workspace member imports: relay_core only the standard library, and every member only what it declares.

relay_core is imported by every deployable, Lambda included, so it imports nothing outside the standard library.
Every member declares the members it imports (its dependencies, or one of its extras).

An undeclared import works in the dev environment, where every member is installed, and fails in the one place
that installs a member alone: a container image (``uv sync --package X``) or a Lambda bundle. Lazy imports inside
functions count: they are how a member reaches an optional part (the smoke test's transport, the weights
converter), and exactly what an image or bundle would miss.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Member:
    """One workspace member: its distribution name, import package, sources and declared member dependencies."""

    distribution: str
    package: str
    sources: Path
    declared: frozenset[str]


def _requirement_name(requirement: str) -> str:
    name = requirement.split(";", 1)[0]
    for stop in "[<>=!~ ":
        name = name.split(stop, 1)[0]
    return name.strip().lower()


def load_member(directory: Path) -> Member:
    """Read a member's pyproject.toml: every requirement of its dependencies and of every extra."""
    project = tomllib.loads((directory / "pyproject.toml").read_text())
    requirements = list(project["project"].get("dependencies", []))
    for extra in project["project"].get("optional-dependencies", {}).values():
        requirements += extra
    (package_path,) = project["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    return Member(
        distribution=project["project"]["name"],
        package=Path(package_path).name,
        sources=directory / package_path,
        declared=frozenset(_requirement_name(r) for r in requirements),
    )


def imported_roots(sources: Path) -> set[str]:
    """The top-level package of every absolute import in ``sources``, at module level or inside functions."""
    roots: set[str] = set()
    for path in sources.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                roots.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                roots.add(node.module.split(".")[0])
    return roots


def undeclared_imports(members: list[Member]) -> dict[str, set[str]]:
    """For each member, the other members it imports without declaring them."""
    by_package = {member.package: member for member in members}
    missing: dict[str, set[str]] = {}
    for member in members:
        used = {by_package[root].distribution for root in imported_roots(member.sources) if root in by_package}
        gaps = used - {member.distribution} - member.declared
        if gaps:
            missing[member.distribution] = gaps
    return missing


def workspace_members() -> list[Member]:
    root = tomllib.loads((REPO / "pyproject.toml").read_text())
    return [load_member(REPO / path) for path in root["tool"]["uv"]["workspace"]["members"]]


def test_every_member_declares_the_members_it_imports() -> None:
    members = workspace_members()
    assert {m.distribution for m in members} >= {"relay-core", "relay-transport", "voice-agent", "relay-functions"}
    assert undeclared_imports(members) == {}


def test_relay_core_imports_only_the_standard_library_and_itself() -> None:
    core = {m.distribution: m for m in workspace_members()}["relay-core"]
    assert len(list(core.sources.rglob("*.py"))) > 10
    assert imported_roots(core.sources) - set(sys.stdlib_module_names) - {"__future__"} == {"relay_core"}


def test_the_check_sees_a_third_party_import_anywhere_in_the_tree(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "m.py").write_text("import os\nfrom pydantic import BaseModel\nfrom . import x\n")
    assert imported_roots(tmp_path) - set(sys.stdlib_module_names) == {"pydantic"}


def test_relay_core_and_the_transports_import_no_deployable() -> None:
    members = {m.distribution: m for m in workspace_members()}
    others = {m.package for m in members.values()}
    assert imported_roots(members["relay-core"].sources) & others == {"relay_core"}
    assert imported_roots(members["relay-transport"].sources) & others == {"relay_core", "relay_transport"}


@pytest.mark.parametrize(
    ("code", "declared", "expected"),
    [
        ("def f():\n    from b_pkg.x import y\n", [], {"a": {"b"}}),  # a lazy import counts
        ("import b_pkg\n", ["b >=1"], {}),
        ("import b_pkg\n", ["b[extra]"], {}),
        ("from a_pkg import z\nimport os\n", [], {}),  # itself and the standard library are fine
    ],
)
def test_the_check_finds_an_undeclared_member(
    tmp_path: Path, code: str, declared: list[str], expected: dict[str, set[str]]
) -> None:
    (tmp_path / "a_pkg").mkdir()
    (tmp_path / "a_pkg" / "m.py").write_text(code)
    (tmp_path / "b_pkg").mkdir()
    members = [
        Member("a", "a_pkg", tmp_path / "a_pkg", frozenset(_requirement_name(r) for r in declared)),
        Member("b", "b_pkg", tmp_path / "b_pkg", frozenset()),
    ]
    assert undeclared_imports(members) == expected
