"""ECR image scan findings for the deployed images (optional part of the dependency audit).

Only findings of severity HIGH or CRITICAL are reported; an image that was never scanned, or is missing, is
noted rather than treated as a finding.
"""

from __future__ import annotations

from typing import Any, Final

from botocore.exceptions import ClientError

REPORTED_SEVERITIES: Final = frozenset({"HIGH", "CRITICAL"})
_NOT_SCANNED: Final = frozenset({"ScanNotFoundException", "ImageNotFoundException", "RepositoryNotFoundException"})


def image_findings(ecr: Any, repository: str, tags: list[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """(findings, notes) for ``repository:tag`` of each tag (a ``sha256:...`` tag is the image's digest); ``ecr`` is
    a boto3 ECR client."""
    findings: list[dict[str, Any]] = []
    notes: list[str] = []
    for tag in tags:
        image_id = {"imageDigest": tag} if tag.startswith("sha256:") else {"imageTag": tag}
        try:
            answer = ecr.describe_image_scan_findings(repositoryName=repository, imageId=image_id)
        except ClientError as exc:
            code = exc.response["Error"]["Code"]
            if code not in _NOT_SCANNED:
                raise
            notes.append(f"{repository}:{tag}: no scan findings available ({code})")
            continue
        scan = answer.get("imageScanFindings", {})
        for item in [*scan.get("findings", []), *scan.get("enhancedFindings", [])]:
            severity = str(item.get("severity", "")).upper()
            if severity in REPORTED_SEVERITIES:
                name = item.get("name") or item.get("packageVulnerabilityDetails", {}).get("vulnerabilityId", "?")
                findings.append({"repository": repository, "tag": tag, "severity": severity, "name": str(name)})
    return findings, notes


__all__ = ["REPORTED_SEVERITIES", "image_findings"]
