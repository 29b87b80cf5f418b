"""The dependency audit workflow executed under moto with the real scan task: the project's own lock passes; a torch
pin below 2.10.0 stores a report naming PYSEC-2026-2286, notifies SNS, and fails the execution."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest

from relay_local.ops_workflows import InProcessLambdas, WorkflowRun, run_workflow

from .conftest import REPO_ROOT, TEST_VALUES

STATES_SEEN: set[str] = set()
"""Every state the executions of this module's tests went through."""
ALL_STATES = {
    "ScanDependencies",
    "StoreReport",
    "AnythingFound",
    "NotifyFindings",
    "VulnerableDependencies",
    "AuditPassed",
    "ScanFailed",
    "StoreReportFailed",
    "NotifyFailed",
}


def pin_torch(lock_text: str, version: str) -> str:
    """The lock with torch's pinned version replaced (the rest untouched)."""
    marker = 'name = "torch"\nversion = "'
    start = lock_text.index(marker) + len(marker)
    end = lock_text.index('"', start)
    return f"{lock_text[:start]}{version}{lock_text[end:]}"


def setup_audit(monkeypatch: pytest.MonkeyPatch, lock_text: str, *, bucket: bool = True) -> str:
    """Upload the lock the way the CDK app does, create the report bucket and a queue subscribed to the topic."""
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="kokoro-relay-inventory-test")
    s3.put_object(Bucket="kokoro-relay-inventory-test", Key="inventory/uv.lock", Body=lock_text.encode())
    if bucket:
        s3.create_bucket(Bucket=TEST_VALUES["AuditReportBucketName"])
    monkeypatch.setenv("AUDIT_LOCK_S3_URI", "s3://kokoro-relay-inventory-test/inventory/uv.lock")
    monkeypatch.setenv("AUDIT_OSV_MODE", "offline")
    sns = boto3.client("sns")
    sqs = boto3.client("sqs")
    topic = sns.create_topic(Name="kokoro-relay-audit")["TopicArn"]
    assert topic == TEST_VALUES["AuditTopicArn"]
    queue = str(sqs.create_queue(QueueName="audit-notifications")["QueueUrl"])
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn)
    return queue


def stored_reports() -> list[dict[str, Any]]:
    s3 = boto3.client("s3")
    bucket = TEST_VALUES["AuditReportBucketName"]
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert all(k.startswith("dependency-audit/") and k.endswith(".json") for k in keys)
    return [json.loads(s3.get_object(Bucket=bucket, Key=k)["Body"].read()) for k in keys]


def notifications(queue: str) -> list[str]:
    messages = boto3.client("sqs").receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", [])
    return [str(json.loads(m["Body"])["Message"]) for m in messages]


def audit(definition: Callable[..., str]) -> WorkflowRun:
    """One execution of the workflow; the states it went through are kept for the last test of the module."""
    run = run_workflow(definition("dependency_audit"), {})
    STATES_SEEN.update(run.states)
    return run


def run_passing(monkeypatch: pytest.MonkeyPatch, definition: Callable[..., str]) -> tuple[WorkflowRun, str]:
    queue = setup_audit(monkeypatch, (REPO_ROOT / "uv.lock").read_text())
    return audit(definition), queue


def run_vulnerable(monkeypatch: pytest.MonkeyPatch, definition: Callable[..., str]) -> tuple[WorkflowRun, str]:
    queue = setup_audit(monkeypatch, pin_torch((REPO_ROOT / "uv.lock").read_text(), "2.9.1"))
    return audit(definition), queue


def test_the_projects_own_lock_passes_and_stores_a_clean_report(
    lambdas: InProcessLambdas, monkeypatch: pytest.MonkeyPatch, definition: Callable[..., str]
) -> None:
    run, queue = run_passing(monkeypatch, definition)
    assert run.status == "SUCCEEDED", run.cause
    assert run.output["findings"] == 0
    [report] = stored_reports()
    assert report["ok"] is True
    assert report["advisory_source"] == "snapshot"
    assert set(report["packages_checked"]) == {"kokoro-image", "agent-image", "functions"}
    assert notifications(queue) == []


def test_torch_below_2_10_fails_names_the_advisory_and_notifies(
    lambdas: InProcessLambdas, monkeypatch: pytest.MonkeyPatch, definition: Callable[..., str]
) -> None:
    run, queue = run_vulnerable(monkeypatch, definition)
    assert run.status == "FAILED"
    assert run.error == "VulnerableDependencies"
    assert "torch 2.9.1 is affected by PYSEC-2026-2286 (fixed in 2.10.0)" in (run.cause or "")
    [report] = stored_reports()
    assert report["ok"] is False
    [finding] = report["findings"]
    assert finding["advisory"] == "PYSEC-2026-2286"
    assert finding["fixed_versions"] == ["2.10.0"]
    assert finding["deployable"] == "kokoro-image"
    [message] = notifications(queue)
    assert "PYSEC-2026-2286" in message


def test_a_scan_that_cannot_read_the_lock_fails_naming_the_step(
    lambdas: InProcessLambdas, monkeypatch: pytest.MonkeyPatch, definition: Callable[..., str]
) -> None:
    setup_audit(monkeypatch, "")
    monkeypatch.setenv("AUDIT_LOCK_S3_URI", "not-a-uri")
    run = audit(definition)
    assert run.status == "FAILED"
    assert run.error == "ScanDependencies.Failed"
    assert "AuditSourceError" in (run.cause or "")
    assert "AUDIT_LOCK_S3_URI must look like s3://bucket/key" in (run.cause or "")


def test_a_missing_report_bucket_fails_at_store_report(
    lambdas: InProcessLambdas, monkeypatch: pytest.MonkeyPatch, definition: Callable[..., str]
) -> None:
    setup_audit(monkeypatch, (REPO_ROOT / "uv.lock").read_text(), bucket=False)
    run = audit(definition)
    assert run.status == "FAILED"
    assert run.error == "StoreReport.Failed"
    assert run.states[-2:] == ["StoreReport", "StoreReportFailed"]


def test_a_failed_notification_fails_at_notify_findings(
    lambdas: InProcessLambdas, monkeypatch: pytest.MonkeyPatch, definition: Callable[..., str]
) -> None:
    setup_audit(monkeypatch, pin_torch((REPO_ROOT / "uv.lock").read_text(), "2.9.1"))
    boto3.client("sns").delete_topic(TopicArn=TEST_VALUES["AuditTopicArn"])
    run = audit(definition)
    assert run.status == "FAILED"
    assert run.error == "NotifyFindings.Failed"
    assert stored_reports()[0]["ok"] is False


def test_every_state_was_executed_by_the_tests_above() -> None:
    states = json.loads((Path(REPO_ROOT) / "statemachines" / "dependency_audit.asl.json").read_text())["States"]
    assert states.keys() == ALL_STATES
    if not STATES_SEEN:
        pytest.skip("run the whole module: this test checks what the scenarios above executed")
    assert STATES_SEEN == ALL_STATES
