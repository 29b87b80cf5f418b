"""ECR image scan findings in the audit (moto's ECR): HIGH/CRITICAL findings are reported, an unscanned image is
a note, and the scan task includes them when AUDIT_ECR_REPOSITORY is set."""

from __future__ import annotations

import json
import os

import boto3
import pytest

from relay_functions.ops.audit_scan import scan
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
    monkeypatch.setenv("AUDIT_ECR_REPOSITORY", "kokoro-relay")
    monkeypatch.setenv("AUDIT_ECR_TAGS", "gpu")
    report = scan(dict(os.environ))
    assert not report.ok
    assert report.findings == ()
    assert "image kokoro-relay:gpu: HIGH" in report.summary()
