"""The dependency audit: every deployable's pinned dependencies checked against OSV advisories.

:func:`run_audit` is the whole logic (the Lambda task and ``relay ops audit`` both call it); it returns an
:class:`AuditReport` whose :meth:`~AuditReport.to_json` is the JSON report stored in S3 and whose
:meth:`~AuditReport.summary` is the human-readable text of the CLI and the SNS notification.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from relay_functions.ops.advisory_sources import LiveOsv, load_advisories
from relay_functions.ops.lockfile import DEPLOYABLES, Deployable, PinnedPackage, inventory


@dataclass(frozen=True, slots=True)
class Finding:
    """One advisory affecting one pinned package of one deployable."""

    deployable: str
    package: str
    version: str
    advisory: str
    aliases: tuple[str, ...]
    summary: str
    fixed: tuple[str, ...]

    def line(self) -> str:
        fix = f"fixed in {', '.join(self.fixed)}" if self.fixed else "no fixed version published"
        return (
            f"{self.deployable}: {self.package} {self.version} is affected by {self.advisory} ({fix}): {self.summary}"
        )


@dataclass(frozen=True, slots=True)
class AuditReport:
    generated_at: str
    source: str
    source_note: str
    packages: dict[str, int]
    findings: tuple[Finding, ...]
    image_findings: tuple[dict[str, Any], ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.findings and not self.image_findings

    def summary(self) -> str:
        counts = ", ".join(f"{name} {n}" for name, n in self.packages.items())
        head = (
            f"Dependency audit {self.generated_at}: pinned packages checked: {counts}; advisories: {self.source_note}."
        )
        if self.ok:
            return f"{head}\nNo known advisory affects a pinned dependency."
        lines = [head, f"{len(self.findings) + len(self.image_findings)} finding(s):"]
        lines += [f"- {f.line()}" for f in self.findings]
        lines += [f"- image {i['repository']}:{i['tag']}: {i['severity']} {i['name']}" for i in self.image_findings]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "generated_at": self.generated_at,
            "ok": self.ok,
            "advisory_source": self.source,
            "advisory_source_note": self.source_note,
            "packages_checked": self.packages,
            "findings": [
                {
                    "deployable": f.deployable,
                    "package": f.package,
                    "version": f.version,
                    "advisory": f.advisory,
                    "aliases": list(f.aliases),
                    "summary": f.summary,
                    "fixed_versions": list(f.fixed),
                }
                for f in self.findings
            ],
            "image_findings": list(self.image_findings),
            "summary": self.summary(),
        }


def find_vulnerabilities(
    pinned: dict[str, list[PinnedPackage]], *, live: LiveOsv | None
) -> tuple[list[Finding], str, str]:
    """Findings for an inventory, and the advisory source used (``live``/``snapshot``) with its note."""
    everything = [p for packages in pinned.values() for p in packages]
    found = load_advisories(everything, live=live)
    findings: list[Finding] = []
    for deployable, packages in pinned.items():
        for package in packages:
            for advisory in found.advisories:
                entry = advisory.affected_entry(package.name, package.version)
                if entry is not None:
                    findings.append(
                        Finding(
                            deployable=deployable,
                            package=package.name,
                            version=package.version,
                            advisory=advisory.id,
                            aliases=advisory.aliases,
                            summary=advisory.summary,
                            fixed=tuple(entry.fixed_versions()),
                        )
                    )
    return findings, found.source, found.note


def run_audit(
    lock_text: str,
    *,
    live: LiveOsv | None,
    deployables: tuple[Deployable, ...] = DEPLOYABLES,
    image_findings: tuple[dict[str, Any], ...] = (),
    now: datetime | None = None,
) -> AuditReport:
    """Audit the deployables of ``lock_text`` (a ``uv.lock``); ``live=None`` uses only the bundled snapshot."""
    pinned = inventory(lock_text, deployables)
    findings, source, note = find_vulnerabilities(pinned, live=live)
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return AuditReport(
        generated_at=stamp,
        source=source,
        source_note=note,
        packages={name: len(packages) for name, packages in pinned.items()},
        findings=tuple(findings),
        image_findings=image_findings,
    )


__all__ = ["AuditReport", "Finding", "find_vulnerabilities", "run_audit"]
