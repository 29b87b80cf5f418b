"""OSV-format advisories (https://ossf.github.io/osv-schema/) and whether a pinned version is affected.

Only what the audit needs: ``id``, ``aliases``, ``summary``, and for each ``affected`` entry the package
(ecosystem ``PyPI``), its ``ranges`` (``ECOSYSTEM`` or ``SEMVER`` events ``introduced`` / ``fixed`` /
``last_affected`` / ``limit``) and explicit ``versions``. Ranges are evaluated as the OSV spec's pseudocode does,
with versions compared by ``packaging`` (PEP 440); ``GIT`` ranges are ignored (we pin releases, not commits).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from relay_functions.ops.errors import AuditSourceError

PYPI: Final = "PyPI"
_ZERO: Final = Version("0")


@dataclass(frozen=True, slots=True)
class RangeEvent:
    """One event of a range; exactly one field is set."""

    introduced: str | None = None
    fixed: str | None = None
    last_affected: str | None = None
    limit: str | None = None


@dataclass(frozen=True, slots=True)
class AffectedPackage:
    """The versions of one PyPI package an advisory affects."""

    name: str
    ranges: tuple[tuple[RangeEvent, ...], ...]
    versions: frozenset[str]

    def affects(self, version: str) -> bool:
        """Whether ``version`` is affected: listed explicitly, or inside one of the ranges."""
        if version in self.versions:
            return True
        try:
            v = Version(version)
        except InvalidVersion:
            return False
        return any(_in_range(v, events) for events in self.ranges)

    def fixed_versions(self) -> list[str]:
        """Every ``fixed`` version of the ranges, lowest first."""
        fixed = {e.fixed for events in self.ranges for e in events if e.fixed}
        return sorted(fixed, key=_sort_key)


@dataclass(frozen=True, slots=True)
class Advisory:
    id: str
    summary: str
    aliases: tuple[str, ...]
    affected: tuple[AffectedPackage, ...]

    def affected_entry(self, name: str, version: str) -> AffectedPackage | None:
        """The entry of this advisory that makes ``name==version`` affected, if any."""
        wanted = canonicalize_name(name)
        return next((a for a in self.affected if a.name == wanted and a.affects(version)), None)


def _sort_key(version: str) -> Version:
    try:
        return Version(version)
    except InvalidVersion:
        return _ZERO


def _in_range(version: Version, events: Sequence[RangeEvent]) -> bool:
    """The OSV spec's evaluation: walk events in version order ("0" first); introduced turns affected on,
    fixed (at or above) and last_affected (above) turn it off; ``limit`` bounds the range."""
    limits = [Version(e.limit) for e in events if e.limit and e.limit != "*"]
    if limits and all(version >= limit for limit in limits):
        return False

    def key(event: RangeEvent) -> Version:
        value = event.introduced or event.fixed or event.last_affected or "0"
        return _ZERO if value == "0" else _sort_key(value)

    affected = False
    for event in sorted((e for e in events if not e.limit), key=key):
        if event.introduced is not None and (event.introduced == "0" or version >= _sort_key(event.introduced)):
            affected = True
        elif (event.fixed is not None and version >= _sort_key(event.fixed)) or (
            event.last_affected is not None and version > _sort_key(event.last_affected)
        ):
            affected = False
    return affected


def parse_advisory(obj: Mapping[str, Any]) -> Advisory:
    """An :class:`Advisory` from one OSV JSON record (entries of other ecosystems are dropped)."""
    try:
        affected = []
        for entry in obj.get("affected", ()):
            package = entry.get("package", {})
            if package.get("ecosystem") != PYPI:
                continue
            ranges = tuple(
                tuple(
                    RangeEvent(**{k: str(v) for k, v in ev.items() if k in RangeEvent.__slots__}) for ev in r["events"]
                )
                for r in entry.get("ranges", ())
                if r.get("type") in ("ECOSYSTEM", "SEMVER")
            )
            affected.append(
                AffectedPackage(
                    name=canonicalize_name(str(package["name"])),
                    ranges=ranges,
                    versions=frozenset(str(v) for v in entry.get("versions", ())),
                )
            )
        return Advisory(
            id=str(obj["id"]),
            summary=str(obj.get("summary") or obj.get("details", "")[:200]),
            aliases=tuple(str(a) for a in obj.get("aliases", ())),
            affected=tuple(affected),
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise AuditSourceError(f"an advisory is not valid OSV JSON ({type(exc).__name__}: {exc})") from exc


__all__ = ["PYPI", "Advisory", "AffectedPackage", "RangeEvent", "parse_advisory"]
