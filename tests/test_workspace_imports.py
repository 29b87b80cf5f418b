"""What each workspace member imports: relay_core only the standard library, every member only what it declares,
and no module imports itself back through others.

relay_core is imported by every deployable, Lambda included, so it imports nothing outside the standard library.
Every member declares the members it imports (its dependencies, or one of its extras).

An undeclared import works in the dev environment, where every member is installed, and fails in the one place
that installs a member alone: a container image (``uv sync --package X``) or a Lambda bundle. Lazy imports inside
functions count: they are how a member reaches an optional part (the smoke test's transport, the weights
converter), and exactly what an image or bundle would miss.

No import circles, across the whole workspace: module ``a`` importing ``b`` while ``b`` (or something ``b``
imports) imports ``a`` means neither can be understood, tested or loaded without the other. A function-level import
counts as an edge too: it hides the circle from the interpreter's start-up, not from the reader, and it is how a
light command ends up loading a whole server (the weights converter once loaded 46 server modules and uvicorn).

No local stand-in imports another: what two share (AWS's error shape and event-stream messages, the local account,
the interface a stand-in is served through) lives in ``relay_local.aws``, and the stacks wire the stand-ins
together, so each stand-in can be read, tested and replaced alone.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from collections.abc import Mapping
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


def module_names(sources: Path) -> dict[str, Path]:
    """Every module under a package directory by its dotted name (a package by its ``__init__``)."""
    modules: dict[str, Path] = {}
    for path in sources.rglob("*.py"):
        parts = path.relative_to(sources.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _resolve(name: str, known: Mapping[str, Path]) -> str | None:
    """The module an imported dotted name loads: itself, or the nearest package above it (``pkg.obj`` → ``pkg``)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(modules: Mapping[str, Path]) -> dict[str, set[str]]:
    """For each module, the modules among ``modules`` it imports, at module level, inside functions or under
    ``TYPE_CHECKING`` alike; relative imports resolved; ``from pkg import sub`` is an edge to ``pkg.sub`` when that
    is a module, else to ``pkg``. Importing ``pkg.sub`` also runs ``pkg/__init__``, but that is no edge of the
    importer's: a package's ``__init__`` that gathers its own submodules would otherwise be a circle by itself."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [f"{base}.{alias.name}" for alias in node.names]
            for target in targets:
                resolved = _resolve(target, modules)
                if resolved is not None and resolved != name:
                    edges.add(resolved)
        graph[name] = edges
    return graph


def import_cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Each group of modules that import one another (a strongly connected component of more than one module),
    sorted, by Tarjan's algorithm; empty when the graph has no circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(cycles)


def workspace_modules() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for member in workspace_members():
        modules.update(module_names(member.sources))
    return modules


def test_no_module_of_the_workspace_imports_itself_back() -> None:
    modules = workspace_modules()
    assert {
        "kokoro_server.cli",
        "kokoro_server.convert.cli",
        "relay_local.bedrock.models",
        "relay_functions.ops.smoke_kokoro",
        "relay_cli.cli",
    } <= modules.keys()
    graph = import_graph(modules)
    assert "kokoro_server.convert.cli" in graph["kokoro_server.cli"]  # the lazy import is seen
    assert import_cycles(graph) == []


STAND_INS = (
    "relay_local.gateway",
    "relay_local.bedrock",
    "relay_local.sagemaker_frontend",
    "relay_local.jwks_issuer",
    "relay_local.moto_dynamodb",
    "relay_local.moto_s3",
)
"""The local stand-ins for AWS services, each a package or a module of ``relay_local``. Its other modules are what
they share (``relay_local.aws``, ``relay_local.servers``) and the stacks that wire them (``stack``, ``relay_stack``,
``gateway_functions``, ...)."""


def stand_in_of(module: str, stand_ins: tuple[str, ...]) -> str | None:
    return next((s for s in stand_ins if module == s or module.startswith(f"{s}.")), None)


def stand_in_crossings(graph: Mapping[str, set[str]], stand_ins: tuple[str, ...]) -> set[tuple[str, str]]:
    """Each import (importer, imported) from a module of one stand-in into a module of another."""
    return {
        (name, target)
        for name, targets in graph.items()
        if (own := stand_in_of(name, stand_ins)) is not None
        for target in targets
        if stand_in_of(target, stand_ins) not in (None, own)
    }


def test_no_stand_in_imports_another() -> None:
    modules = workspace_modules()
    for stand_in in STAND_INS:
        assert stand_in in modules, f"{stand_in} is gone: update STAND_INS"
    graph = import_graph(modules)
    assert "relay_local.aws.errors" in graph["relay_local.bedrock.runtime"]  # the shared piece, not the gateway
    assert stand_in_crossings(graph, STAND_INS) == set()
    shared = {t for name, targets in graph.items() if name.startswith("relay_local.aws") for t in targets}
    assert {t for t in shared if stand_in_of(t, STAND_INS)} == set()  # the shared package imports no stand-in


def test_the_stand_in_rule_finds_a_crossing_and_allows_the_shared_and_the_wiring() -> None:
    graph = {
        "loc.a.x": {"loc.a.y", "loc.shared"},  # its own package and the shared module
        "loc.b": {"loc.a.x"},  # one stand-in importing another
        "loc.stack": {"loc.a.x", "loc.b"},  # the wiring imports them all
    }
    assert stand_in_crossings(graph, ("loc.a", "loc.b")) == {("loc.b", "loc.a.x")}


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        # a function-level import closes a circle as surely as a module-level one
        ({"a.py": "from pkg import b\n", "b.py": "def f():\n    from pkg.a import x\n"}, [["pkg.a", "pkg.b"]]),
        # relative imports, through three modules
        (
            {"a.py": "from .b import y\n", "b.py": "from . import c\n", "c.py": "import pkg.a\n"},
            [["pkg.a", "pkg.b", "pkg.c"]],
        ),
        # a package gathering its submodules is no circle; a submodule importing its package back is one
        ({"__init__.py": "from pkg.a import x\n", "a.py": "import os\n"}, []),
        ({"__init__.py": "from pkg.a import x\n", "a.py": "from pkg import y\n"}, [["pkg", "pkg.a"]]),
        ({"a.py": "from pkg.b import x\n", "b.py": "import json\n"}, []),
    ],
)
def test_the_cycle_check_finds_a_circle(tmp_path: Path, files: dict[str, str], expected: list[list[str]]) -> None:
    (tmp_path / "pkg").mkdir()
    for name, code in {"__init__.py": "", **files}.items():
        (tmp_path / "pkg" / name).write_text(code)
    assert import_cycles(import_graph(module_names(tmp_path / "pkg"))) == expected


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
