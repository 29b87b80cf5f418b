"""ECR image scan findings in the audit (moto's ECR): HIGH/CRITICAL findings are reported, an unscanned image is
a note, and the scan task includes them for each image of AUDIT_ECR_IMAGES."""

from __future__ import annotations

import json
import os

import boto3
import pytest

from relay_functions.ops.audit_scan import scan, scanned_images
from relay_functions.ops.errors import AuditSourceError
from relay_functions.ops.image_scan import image_findings

from .conftest import REPO_ROOT

MANIFEST_TYPE = "application/vnd.docker.distribution.manifest.v2+json"


def test_high_findings_are_reported_and_missing_images_noted(aws: None, monkeypatch: pytest.MonkeyPatch) -> None:
    ecr = boto3.client("ecr")
    ecr.create_repository(repositoryName="kokoro-relay")
    ecr.put_image(
        repositoryName="kokoro-relay",
        imageManifest=json.dumps({"schemaVersion": 2, "mediaType": MANIFEST_TYPE, "layers": []}),
        imageManifestMediaType=MANIFEST_TYPE,
        imageTag="gpu",
    )
    ecr.start_image_scan(repositoryName="kokoro-relay", imageId={"imageTag": "gpu"})
    findings, notes = image_findings(ecr, "kokoro-relay", ["gpu", "missing"])
    assert findings, "moto's default scan result has a HIGH finding"
    assert {f["severity"] for f in findings} <= {"HIGH", "CRITICAL"}
    assert all(f["repository"] == "kokoro-relay" and f["tag"] == "gpu" for f in findings)
    assert notes == ["kokoro-relay:missing: no scan findings available (ImageNotFoundException)"]

    lock = REPO_ROOT / "uv.lock"
    monkeypatch.setenv("AUDIT_LOCK_PATH", str(lock))
    monkeypatch.setenv("AUDIT_OSV_MODE", "offline")
    monkeypatch.setenv("AUDIT_ECR_IMAGES", "kokoro-relay:gpu")
    report = scan(dict(os.environ))
    assert not report.ok
    assert report.findings == ()
    assert "image kokoro-relay:gpu: HIGH" in report.summary()


def test_both_images_are_scanned_each_in_its_own_repository(aws: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Kokoro image and the agent image (pinned by digest, in another repository) are both audited."""
    ecr = boto3.client("ecr")
    digests = {}
    for repository, tag in (("kokoro-tts", "gpu-1"), ("kokoro-agent", "arm64")):
        ecr.create_repository(repositoryName=repository)
        pushed = ecr.put_image(
            repositoryName=repository,
            imageManifest=json.dumps({"schemaVersion": 2, "mediaType": MANIFEST_TYPE, "layers": [], "x": repository}),
            imageManifestMediaType=MANIFEST_TYPE,
            imageTag=tag,
        )
        digests[repository] = pushed["image"]["imageId"]["imageDigest"]
        ecr.start_image_scan(repositoryName=repository, imageId={"imageTag": tag})
    monkeypatch.setenv("AUDIT_LOCK_PATH", str(REPO_ROOT / "uv.lock"))
    monkeypatch.setenv("AUDIT_OSV_MODE", "offline")
    monkeypatch.setenv("AUDIT_ECR_IMAGES", f"kokoro-tts:gpu-1,kokoro-agent@{digests['kokoro-agent']}")
    report = scan(dict(os.environ))
    assert {f["repository"] for f in report.image_findings} == {"kokoro-tts", "kokoro-agent"}


def test_image_list_parsing_and_its_error() -> None:
    assert scanned_images(" a:1, b@sha256:ff ,a:1,") == [("a", "1"), ("b", "sha256:ff")]
    assert scanned_images("") == []
    with pytest.raises(AuditSourceError, match="<repository>:<tag>"):
        scanned_images("no-tag")
