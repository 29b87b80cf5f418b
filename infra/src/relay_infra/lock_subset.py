"""One image's share of the workspace's ``uv.lock``: what one workspace package installs, and nothing else.

An image built with the whole lock changes whenever any member's dependencies do. :func:`lock_subset` cuts the lock
down to the closure of one package, under every marker (the lock stays universal): the workspace members it reaches,
each whole (its dependencies, every extra and dependency group, as ``uv lock`` records a member), and the registry
packages they reach, each with only the extras something in the closure asks for. The ``[[package]]`` entries kept
are the lock's own bytes (an optional-dependency table trimmed to those extras), so the subset changes exactly when a
locked package of that closure does, and never when another member's dependencies do.

With a workspace root that lists only those members and a virtual root project named ``root_project``
(:mod:`relay_infra.image_context` writes one), uv takes the subset as that workspace's up-to-date lock (``uv lock
--check``), and ``uv sync --frozen --package <package>`` installs from it exactly what it installs from the whole
lock, hashes included (tests/infra/test_lock_subset.py checks both with uv itself).
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

LOCAL_SOURCES = ("editable", "virtual", "directory")
"""Source kinds of a workspace member in uv.lock (a path inside the workspace); everything else is a distribution."""
PACKAGE_HEADER = "[[package]]\n"
OPTIONAL_HEADER = "[package.optional-dependencies]\n"
ROOT_PROJECT_VERSION = "0"
"""The version of the generated root project (it is never built: ``[tool.uv] package = false``)."""

_PACKAGE_START = re.compile(r"^(?=\[\[package\]\]$)", re.MULTILINE)
_MANIFEST = re.compile(r"^\[manifest\]\n.*?(?=^\[|\Z)", re.MULTILINE | re.DOTALL)
_OPTIONAL_ENTRY = re.compile(r"^(?P<extra>[A-Za-z0-9_.-]+) = \[\n.*?^\]\n", re.MULTILINE | re.DOTALL)


class LockSubsetError(ValueError):
    """The lock cannot be cut down: the message says what is wrong and what to do."""


@dataclass(frozen=True, slots=True)
class LockSubset:
    """A cut-down lock (``text``) and the workspace members it holds (``members``: root-relative paths, sorted)."""

    text: str
    members: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Entry:
    """One ``[[package]]`` block of the lock: its bytes and its parsed table."""

    text: str
    table: Mapping[str, Any]

    @property
    def name(self) -> str:
        return str(self.table["name"])

    @property
    def source(self) -> Mapping[str, Any]:
        source: Mapping[str, Any] = self.table.get("source", {})
        return source

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.name, str(self.table.get("version", "")), json.dumps(self.source, sort_keys=True))

    @property
    def member_path(self) -> str | None:
        """The workspace path of a member (``None`` for a distribution)."""
        for kind in LOCAL_SOURCES:
            if kind in self.source:
                return str(self.source[kind])
        return None

    def optional(self) -> Mapping[str, Sequence[Mapping[str, Any]]]:
        optional: Mapping[str, Sequence[Mapping[str, Any]]] = self.table.get("optional-dependencies", {})
        return optional

    def groups(self) -> Mapping[str, Sequence[Mapping[str, Any]]]:
        groups: Mapping[str, Sequence[Mapping[str, Any]]] = self.table.get("dev-dependencies", {})
        return groups


def _split(lock_text: str) -> tuple[str, list[_Entry]]:
    """The lock's header (everything before the first package) and its package blocks, in the lock's order."""
    header, *blocks = _PACKAGE_START.split(lock_text)
    if not blocks:
        raise LockSubsetError("uv.lock has no [[package]] entries; run `uv lock` at the repository root")
    entries = []
    for block in blocks:
        text = block.rstrip("\n") + "\n"
        try:
            (table,) = tomllib.loads(text)["package"]
        except (tomllib.TOMLDecodeError, KeyError, ValueError) as exc:
            raise LockSubsetError(
                f"uv.lock has a [[package]] entry this reader cannot parse ({exc}); run `uv lock` at the repository "
                "root with the uv the Dockerfiles use"
            ) from exc
        entries.append(_Entry(text, table))
    return header, entries


class _Lock:
    """The lock's entries, looked up the way uv resolves a dependency (name, then version and source if given)."""

    def __init__(self, entries: list[_Entry]) -> None:
        self.entries = entries
        self._by_name: dict[str, list[_Entry]] = {}
        for entry in entries:
            self._by_name.setdefault(entry.name, []).append(entry)

    def holds(self, name: str) -> bool:
        return name in self._by_name

    def named(self, name: str) -> _Entry:
        matches = self._by_name.get(name, [])
        members = [entry for entry in matches if entry.member_path is not None]
        if len(members) != 1:
            raise LockSubsetError(
                f"{name!r} is not a workspace member in uv.lock; name a member's [project] name, and run `uv lock` "
                "if it is new"
            )
        return members[0]

    def resolve(self, dependency: Mapping[str, Any], dependent: _Entry) -> list[_Entry]:
        matches = [
            entry
            for entry in self._by_name.get(str(dependency["name"]), [])
            if dependency.get("version") in (None, entry.table.get("version"))
            and dependency.get("source") in (None, entry.source)
        ]
        if not matches:
            raise LockSubsetError(
                f"uv.lock's {dependent.name!r} depends on {dependency['name']!r}, which the lock does not hold; "
                "run `uv lock` at the repository root"
            )
        return matches


def _closure(lock: _Lock, package: str) -> dict[tuple[str, str, str], set[str]]:
    """Every entry ``package`` reaches under any marker, mapped to the extras asked of it (members: all of theirs)."""
    wanted: dict[tuple[str, str, str], set[str]] = {}
    pending: list[tuple[_Entry, Sequence[str]]] = [(lock.named(package), ())]
    while pending:
        entry, extras = pending.pop()
        first = entry.key not in wanted
        asked = wanted.setdefault(entry.key, set())
        dependencies: list[Mapping[str, Any]] = []
        if first:
            dependencies.extend(entry.table.get("dependencies", ()))
        if entry.member_path is not None:
            extras = (*entry.optional(), *extras)
            if first:
                for group in entry.groups().values():
                    dependencies.extend(group)
        for extra in sorted(set(extras) - asked):
            asked.add(extra)
            dependencies.extend(entry.optional().get(extra, ()))
        for dependency in dependencies:
            pending.extend((target, dependency.get("extra", ())) for target in lock.resolve(dependency, entry))
    return wanted


def _trim_optional(entry: _Entry, keep: set[str]) -> str:
    """The entry's bytes with its optional-dependency table holding only ``keep`` (verified by re-parsing)."""
    optional = entry.optional()
    if set(optional) <= keep:
        return entry.text
    text = entry.text
    start = text.index(OPTIONAL_HEADER)
    body_start = start + len(OPTIONAL_HEADER)
    blank = text.find("\n\n", body_start)
    body_end = len(text) if blank < 0 else blank + 1
    body = text[body_start:body_end]
    matches = list(_OPTIONAL_ENTRY.finditer(body))
    kept = "".join(match.group(0) for match in matches if match.group("extra") in keep)
    before = text[:body_start] + kept if kept else text[:start].rstrip("\n") + "\n"
    trimmed = before + text[body_end:]
    expected = {key: value for key, value in entry.table.items() if key != "optional-dependencies"}
    if kept:
        expected["optional-dependencies"] = {extra: deps for extra, deps in optional.items() if extra in keep}
    if "".join(match.group(0) for match in matches) != body or tomllib.loads(trimmed)["package"] != [expected]:
        raise LockSubsetError(
            f"uv.lock's entry for {entry.name!r} is not laid out as relay_infra.lock_subset expects; run `uv lock` "
            "with the uv the Dockerfiles use, or teach lock_subset the new layout"
        )
    return trimmed.rstrip("\n") + "\n"


def _root_entry(root_project: str) -> _Entry:
    text = f'{PACKAGE_HEADER}name = {json.dumps(root_project)}\nversion = "{ROOT_PROJECT_VERSION}"\n'
    text += 'source = { virtual = "." }\n'
    return _Entry(text, tomllib.loads(text)["package"][0])


def lock_subset(lock_text: str, package: str, root_project: str) -> LockSubset:
    """``lock_text`` (a workspace's uv.lock) cut down to what ``package`` installs, for a workspace whose root is a
    virtual project named ``root_project`` and whose members are the subset's :attr:`LockSubset.members`.

    Raises :class:`LockSubsetError` when ``package`` is not a member, the lock is inconsistent, or an entry is laid
    out in a way this reader does not know (the subset is then never silently wrong)."""
    header, entries = _split(lock_text)
    lock = _Lock(entries)
    if lock.holds(root_project):
        raise LockSubsetError(f"the root project name {root_project!r} is already a package in uv.lock; pick another")
    wanted = _closure(lock, package)
    kept = [entry for entry in entries if entry.key in wanted]
    members = sorted(path for entry in kept if (path := entry.member_path) is not None)
    for path in members:
        if path in ("", ".") or path.startswith(("/", "../")) or "/../" in path:
            raise LockSubsetError(f"the workspace member path {path!r} in uv.lock is not inside the workspace")
    blocks = [
        entry.text if entry.member_path is not None else _trim_optional(entry, wanted[entry.key]) for entry in kept
    ]
    root = _root_entry(root_project)
    position = sum(1 for entry in kept if entry.name < root_project)
    blocks.insert(position, root.text)
    names = sorted({root_project, *(entry.name for entry in kept if entry.member_path is not None)})
    manifest = "[manifest]\nmembers = [\n" + "".join(f"    {json.dumps(name)},\n" for name in names) + "]\n"
    head = _MANIFEST.sub("", header).rstrip("\n")
    return LockSubset(f"{head}\n\n{manifest}\n" + "\n".join(blocks), tuple(members))


__all__ = ["LockSubset", "LockSubsetError", "lock_subset"]
