"""Where advisories come from: the live OSV API when it answers, the bundled snapshot when it does not.

:class:`LiveOsv` asks ``POST /v1/querybatch`` which advisories touch each pinned version, then fetches each
advisory once (``GET /v1/vulns/<id>``) for its ranges; any network failure or timeout raises
:class:`OsvUnreachableError`, and :func:`load_advisories` falls back to :func:`snapshot_advisories` (the package data
file ``advisories/osv-snapshot.json``), saying which source it used.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final

from relay_functions.ops.errors import AuditSourceError
from relay_functions.ops.lockfile import PinnedPackage
from relay_functions.ops.osv import PYPI, Advisory, parse_advisory

OSV_API_URL: Final = "https://api.osv.dev"
OSV_TIMEOUT_S: Final = 4.0
SNAPSHOT_RESOURCE: Final = "advisories/osv-snapshot.json"
QUERY_BATCH_SIZE: Final = 500


class OsvUnreachableError(Exception):
    """The live OSV API did not answer (network, DNS, timeout, or an HTTP error)."""


@dataclass(frozen=True, slots=True)
class AdvisorySet:
    """Advisories and where they came from (``live`` or ``snapshot``, with a note for the report)."""

    advisories: tuple[Advisory, ...]
    source: str
    note: str


HttpPost = Callable[[str, bytes | None, float], Any]
"""(url, JSON body or None for GET, timeout) -> decoded JSON; raises OsvUnreachableError."""


def urllib_json(url: str, body: bytes | None, timeout_s: float) -> Any:
    """GET (``body`` None) or POST JSON with the standard library; network trouble -> :class:`OsvUnreachableError`."""
    if not url.startswith("https://"):
        raise OsvUnreachableError(f"refusing a non-HTTPS advisory URL {url!r}")
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 - https only (checked)
            return json.loads(response.read())
    except (urllib.error.URLError, TimeoutError, OSError, ValueError) as exc:
        raise OsvUnreachableError(f"{type(exc).__name__}: {exc}") from exc


@dataclass(frozen=True, slots=True)
class LiveOsv:
    """The OSV API at ``base_url``."""

    base_url: str = OSV_API_URL
    timeout_s: float = OSV_TIMEOUT_S
    fetch: HttpPost = urllib_json

    def advisories_for(self, packages: Iterable[PinnedPackage]) -> tuple[Advisory, ...]:
        unique = sorted(set(packages), key=lambda p: (p.name, p.version))
        ids: set[str] = set()
        for start in range(0, len(unique), QUERY_BATCH_SIZE):
            batch = unique[start : start + QUERY_BATCH_SIZE]
            body = {"queries": [{"package": {"name": p.name, "ecosystem": PYPI}, "version": p.version} for p in batch]}
            answer = self.fetch(f"{self.base_url}/v1/querybatch", json.dumps(body).encode(), self.timeout_s)
            for result in answer.get("results", []):
                ids.update(str(v["id"]) for v in result.get("vulns", []) if "id" in v)
        return tuple(
            parse_advisory(self.fetch(f"{self.base_url}/v1/vulns/{i}", None, self.timeout_s)) for i in sorted(ids)
        )


def snapshot_document() -> dict[str, Any]:
    """The bundled snapshot file as JSON."""
    text = resources.files("relay_functions.ops").joinpath(SNAPSHOT_RESOURCE).read_text(encoding="utf-8")
    document: dict[str, Any] = json.loads(text)
    return document


def snapshot_advisories() -> AdvisorySet:
    document = snapshot_document()
    advisories = tuple(parse_advisory(v) for v in document.get("vulns", []))
    if not advisories:
        raise AuditSourceError("the bundled advisory snapshot is empty; reinstall relay-functions")
    return AdvisorySet(advisories, "snapshot", f"bundled OSV snapshot of {document.get('snapshot_date', '?')}")


def load_advisories(packages: Iterable[PinnedPackage], *, live: LiveOsv | None) -> AdvisorySet:
    """Advisories for ``packages`` from ``live`` (None = offline), or the snapshot when it cannot be reached."""
    if live is not None:
        try:
            found = live.advisories_for(packages)
        except OsvUnreachableError as exc:
            fallback = snapshot_advisories()
            return AdvisorySet(fallback.advisories, "snapshot", f"{fallback.note} (live OSV unreachable: {exc})")
        return AdvisorySet(found, "live", f"OSV API {live.base_url}")
    return snapshot_advisories()


__all__ = [
    "OSV_API_URL",
    "AdvisorySet",
    "LiveOsv",
    "OsvUnreachableError",
    "load_advisories",
    "snapshot_advisories",
    "snapshot_document",
    "urllib_json",
]
