"""Lambda task ``relay_functions.ops.audit_scan.handler``: the dependency audit's scan.

Environment: ``AUDIT_LOCK_S3_URI`` (``s3://bucket/key`` of the workspace ``uv.lock`` the CDK app uploads) or
``AUDIT_LOCK_PATH`` (a file bundled with the function); ``AUDIT_OSV_MODE`` = ``live`` (default; falls back to the
bundled snapshot when OSV cannot be reached) or ``offline``; optional ``AUDIT_ECR_IMAGES`` to add the ECR image
scan findings of the deployed images: comma-separated ``<repository>:<tag>`` or ``<repository>@sha256:<digest>``,
one per image (the CDK app names both, the Kokoro image and the agent image, each in its own repository).

Output: ``{"ok", "findings", "summary", "report"}``; the state machine stores ``report`` in S3 and notifies SNS
when ``findings`` > 0.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import boto3
from aws_lambda_powertools import Logger

from relay_functions.ops.advisory_sources import LiveOsv
from relay_functions.ops.audit import AuditReport, run_audit
from relay_functions.ops.errors import AuditSourceError
from relay_functions.ops.image_scan import image_findings

logger = Logger(service="relay-ops")


def read_lock(environ: dict[str, str]) -> str:
    """The lock file text named by the environment."""
    uri = environ.get("AUDIT_LOCK_S3_URI")
    if uri:
        parsed = urlparse(uri)
        if parsed.scheme != "s3" or not parsed.netloc or not parsed.path.strip("/"):
            raise AuditSourceError(f"AUDIT_LOCK_S3_URI must look like s3://bucket/key; got {uri!r}")
        body = boto3.client("s3").get_object(Bucket=parsed.netloc, Key=parsed.path.lstrip("/"))["Body"].read()
        return bytes(body).decode("utf-8")
    path = environ.get("AUDIT_LOCK_PATH")
    if path:
        try:
            return Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise AuditSourceError(f"cannot read AUDIT_LOCK_PATH {path!r}: {exc}") from exc
    raise AuditSourceError("set AUDIT_LOCK_S3_URI (s3://bucket/key of uv.lock) or AUDIT_LOCK_PATH")


def scanned_images(value: str) -> list[tuple[str, str]]:
    """``"repo-a:tag,repo-b@sha256:d"`` → ``[("repo-a", "tag"), ("repo-b", "sha256:d")]`` (distinct, in order)."""
    images: list[tuple[str, str]] = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        repository, at, digest = item.partition("@")
        if not at:
            repository, colon, digest = item.rpartition(":")
            if not colon or not repository or not digest:
                raise AuditSourceError(
                    f"AUDIT_ECR_IMAGES: {item!r} is not <repository>:<tag> or <repository>@sha256:<digest>"
                )
        if (repository, digest) not in images:
            images.append((repository, digest))
    return images


def scan(environ: dict[str, str]) -> AuditReport:
    """The audit as configured by ``environ``."""
    lock_text = read_lock(environ)
    live = None if environ.get("AUDIT_OSV_MODE", "live") == "offline" else LiveOsv()
    extra: list[dict[str, Any]] = []
    images = scanned_images(environ.get("AUDIT_ECR_IMAGES", ""))
    if images:
        ecr = boto3.client("ecr")
        for repository, tag in images:
            found, notes = image_findings(ecr, repository, [tag])
            extra += found
            for note in notes:
                logger.info("image scan", note=note)
    return run_audit(lock_text, live=live, image_findings=tuple(extra))


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    report = scan(dict(os.environ))
    findings = len(report.findings) + len(report.image_findings)
    logger.info("dependency audit", findings=findings, advisory_source=report.source)
    return {"ok": report.ok, "findings": findings, "summary": report.summary(), "report": report.to_json()}


__all__ = ["handler", "read_lock", "scan", "scanned_images"]
