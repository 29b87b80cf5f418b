"""The pinned dependencies of each deployable, read from the workspace's committed ``uv.lock``.

A deployable is a workspace package plus the extras its image installs (the Dockerfiles run
``uv sync --frozen --package <name> [--extra <x>]``; a test checks :data:`DEPLOYABLES` against them). Its inventory
is the closure of that package's locked dependencies, with environment markers evaluated for the Linux targets we
ship (x86_64 for the GPU image and the functions, aarch64 for the agent image): a dependency is kept when its marker
holds on either. Workspace members themselves (editable/virtual sources) are ours and carry no advisories; they are
left out.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from packaging.markers import InvalidMarker, Marker
from packaging.utils import canonicalize_name

from relay_functions.ops.errors import AuditSourceError


@dataclass(frozen=True, slots=True)
class Deployable:
    """Something we ship: ``package`` (a workspace member) installed with ``extras``."""

    name: str
    package: str
    extras: tuple[str, ...] = ()


DEPLOYABLES: Final[tuple[Deployable, ...]] = (
    Deployable("kokoro-image", "kokoro-server", ("torch",)),
    Deployable("agent-image", "voice-agent"),
    Deployable("functions", "relay-functions"),
)
"""The two container images (containers/kokoro/Dockerfile.gpu, containers/agent/Dockerfile) and the Lambda functions."""

TARGET_ENVIRONMENTS: Final[tuple[dict[str, str], ...]] = tuple(
    {
        "sys_platform": "linux",
        "platform_system": "Linux",
        "os_name": "posix",
        "platform_machine": machine,
        "platform_python_implementation": "CPython",
        "implementation_name": "cpython",
        "python_version": "3.12",
        "python_full_version": "3.12.8",
        "implementation_version": "3.12.8",
        "extra": "",
    }
    for machine in ("x86_64", "aarch64")
)


@dataclass(frozen=True, slots=True)
class PinnedPackage:
    """One locked third-party distribution (``name`` normalised per PEP 503)."""

    name: str
    version: str


@dataclass(frozen=True, slots=True)
class _Entry:
    name: str
    version: str
    registry: bool
    dependencies: tuple[Mapping[str, Any], ...]
    optional: Mapping[str, tuple[Mapping[str, Any], ...]]


class LockFile:
    """A parsed ``uv.lock``: look up each deployable's pinned closure."""

    def __init__(self, text: str) -> None:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise AuditSourceError(f"the lock file is not valid TOML: {exc}; pass the workspace's uv.lock") from exc
        packages = data.get("package")
        if not isinstance(packages, list) or not packages:
            raise AuditSourceError("the lock file has no [[package]] entries; pass the workspace's uv.lock")
        self._entries: dict[str, list[_Entry]] = {}
        for raw in packages:
            source = raw.get("source", {})
            entry = _Entry(
                name=canonicalize_name(str(raw["name"])),
                version=str(raw.get("version", "")),
                registry="registry" in source or "url" in source,
                dependencies=tuple(raw.get("dependencies", ())),
                optional={k: tuple(v) for k, v in raw.get("optional-dependencies", {}).items()},
            )
            self._entries.setdefault(entry.name, []).append(entry)

    def closure(self, deployable: Deployable) -> list[PinnedPackage]:
        """The third-party distributions ``deployable`` installs, sorted by name."""
        roots = self._entries.get(canonicalize_name(deployable.package))
        if not roots:
            raise AuditSourceError(f"{deployable.package!r} is not in the lock file; is this the workspace's uv.lock?")
        root = roots[0]
        missing = [x for x in deployable.extras if x not in root.optional]
        if missing:
            raise AuditSourceError(f"{deployable.package!r} has no extra {missing[0]!r} in the lock file")
        seen: set[tuple[str, str]] = set()
        stack: list[_Entry] = [root]
        while stack:
            entry = stack.pop()
            if (entry.name, entry.version) in seen:
                continue
            seen.add((entry.name, entry.version))
            deps: list[Mapping[str, Any]] = list(entry.dependencies)
            if entry is root:
                for extra in deployable.extras:
                    deps.extend(entry.optional[extra])
            for dep in deps:
                stack.extend(self._resolve(dep))
                for extra in dep.get("extra", ()):
                    for target in self._resolve(dep):
                        stack.extend(self._resolve_all(target.optional.get(extra, ())))
        pinned = {
            PinnedPackage(e.name, e.version)
            for name, version in seen
            for e in self._entries[name]
            if e.version == version and e.registry
        }
        return sorted(pinned, key=lambda p: (p.name, p.version))

    def _resolve_all(self, deps: Iterable[Mapping[str, Any]]) -> list[_Entry]:
        return [entry for dep in deps for entry in self._resolve(dep)]

    def _resolve(self, dep: Mapping[str, Any]) -> list[_Entry]:
        if not _marker_holds(dep.get("marker")):
            return []
        candidates = self._entries.get(canonicalize_name(str(dep["name"])), [])
        version = dep.get("version")
        return [c for c in candidates if version is None or c.version == version]


def _marker_holds(marker: object) -> bool:
    if not marker:
        return True
    try:
        parsed = Marker(str(marker))
    except InvalidMarker:
        return True  # an unreadable marker: keep the dependency (the audit errs on the side of checking)
    return any(parsed.evaluate(env) for env in TARGET_ENVIRONMENTS)


def inventory(lock_text: str, deployables: Iterable[Deployable] = DEPLOYABLES) -> dict[str, list[PinnedPackage]]:
    """Deployable name -> its pinned third-party distributions."""
    lock = LockFile(lock_text)
    return {d.name: lock.closure(d) for d in deployables}


__all__ = ["DEPLOYABLES", "Deployable", "LockFile", "PinnedPackage", "inventory"]
