"""The dependency audit's parts: OSV range evaluation, the lock-file inventory per deployable (checked against the
Dockerfiles), the live source and its fallback to the bundled snapshot, and the report."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from relay_functions.ops.advisory_sources import LiveOsv, OsvUnreachableError, load_advisories, snapshot_document
from relay_functions.ops.audit import run_audit
from relay_functions.ops.errors import AuditSourceError
from relay_functions.ops.lockfile import DEPLOYABLES, LockFile, PinnedPackage
from relay_functions.ops.osv import parse_advisory

from .conftest import REPO_ROOT
from .test_dependency_audit_workflow import pin_torch

LOCK = (REPO_ROOT / "uv.lock").read_text()


def advisory(events: list[dict[str, str]], versions: list[str] | None = None, name: str = "torch") -> Any:
    return parse_advisory(
        {
            "id": "TEST-1",
            "affected": [
                {
                    "package": {"ecosystem": "PyPI", "name": name},
                    "ranges": [{"type": "ECOSYSTEM", "events": events}],
                    "versions": versions or [],
                }
            ],
        }
    )


@pytest.mark.parametrize(
    ("events", "version", "affected"),
    [
        ([{"introduced": "0"}, {"fixed": "2.10.0"}], "2.9.1", True),
        ([{"introduced": "0"}, {"fixed": "2.10.0"}], "2.10.0", False),
        ([{"introduced": "0"}, {"fixed": "2.10.0"}], "2.15.0", False),
        ([{"introduced": "0"}, {"fixed": "2.10.0"}], "2.10.0rc1", True),  # a pre-release of the fix is before it
        ([{"introduced": "1.5"}, {"fixed": "1.7"}], "1.4", False),
        ([{"introduced": "1.5"}, {"last_affected": "1.6.2"}], "1.6.2", True),
        ([{"introduced": "1.5"}, {"last_affected": "1.6.2"}], "1.6.3", False),
        ([{"introduced": "1.0"}, {"fixed": "1.1"}, {"introduced": "2.0"}, {"fixed": "2.1"}], "2.0.5", True),
        ([{"introduced": "1.0"}, {"fixed": "1.1"}, {"introduced": "2.0"}, {"fixed": "2.1"}], "1.5", False),
        ([{"introduced": "0"}, {"limit": "3.0"}], "3.1", False),
        ([{"introduced": "0"}, {"limit": "3.0"}], "2.9", True),
    ],
)
def test_ranges_are_evaluated_as_the_osv_spec_says(events: list[dict[str, str]], version: str, affected: bool) -> None:
    assert (advisory(events).affected_entry("torch", version) is not None) is affected


def test_explicit_versions_and_name_normalisation() -> None:
    entry = advisory([], versions=["0.9.4"], name="Kokoro_Onnx")
    assert entry.affected_entry("kokoro-onnx", "0.9.4") is not None
    assert entry.affected_entry("kokoro-onnx", "0.9.5") is None


def test_the_snapshot_names_pysec_2026_2286_fixed_in_2_10_0() -> None:
    [record] = [v for v in snapshot_document()["vulns"] if v["id"] == "PYSEC-2026-2286"]
    parsed = parse_advisory(record)
    [torch] = parsed.affected
    assert torch.name == "torch"
    assert torch.fixed_versions() == ["2.10.0"]
    assert torch.affects("2.9.1") and not torch.affects("2.10.0")


def test_each_deployable_installs_what_its_dockerfile_syncs(
    dockerfile: Callable[[Path], list[tuple[str, str]]],
) -> None:
    images = {
        "kokoro-image": REPO_ROOT / "containers/kokoro/Dockerfile.gpu",
        "agent-image": REPO_ROOT / "containers/agent/Dockerfile",
    }
    for deployable in DEPLOYABLES:
        if deployable.name not in images:
            continue
        syncs = [args for kind, args in dockerfile(images[deployable.name]) if kind == "RUN" and "uv sync" in args]
        assert syncs, f"{images[deployable.name]} has no uv sync"
        words = syncs[0].split()
        assert words[words.index("--package") + 1] == deployable.package
        extras = tuple(words[i + 1] for i, w in enumerate(words) if w == "--extra")
        assert extras == deployable.extras


def test_inventory_follows_extras_and_leaves_out_workspace_members() -> None:
    lock = LockFile(LOCK)
    kokoro = {p.name for p in lock.closure(DEPLOYABLES[0])}
    agent = {p.name for p in lock.closure(DEPLOYABLES[1])}
    functions = {p.name for p in lock.closure(DEPLOYABLES[2])}
    assert "torch" in kokoro and "onnxruntime" in kokoro
    assert "strands-agents" in agent and "torch" not in agent
    assert "boto3" in functions and not {"torch", "onnxruntime"} & functions
    assert not {"relay-core", "kokoro-server", "voice-agent", "relay-functions"} & (kokoro | agent | functions)


def test_a_lock_that_is_not_a_uv_lock_is_refused_with_a_hint() -> None:
    with pytest.raises(AuditSourceError, match=r"uv\.lock"):
        LockFile("this is = not [toml")
    with pytest.raises(AuditSourceError, match="no \\[\\[package\\]\\]"):
        LockFile("version = 1\n")


def test_the_projects_lock_passes_and_a_torch_pin_below_2_10_fails() -> None:
    assert run_audit(LOCK, live=None).ok
    report = run_audit(pin_torch(LOCK, "2.9.1"), live=None)
    assert not report.ok
    [finding] = report.findings
    assert (finding.package, finding.version, finding.advisory, finding.fixed) == (
        "torch",
        "2.9.1",
        "PYSEC-2026-2286",
        ("2.10.0",),
    )
    assert "torch 2.9.1 is affected by PYSEC-2026-2286 (fixed in 2.10.0)" in report.summary()
    assert report.to_json()["findings"][0]["fixed_versions"] == ["2.10.0"]


def test_live_osv_is_queried_in_batch_then_per_advisory() -> None:
    calls: list[tuple[str, Any]] = []
    record = snapshot_document()["vulns"][0]

    def fetch(url: str, body: bytes | None, timeout_s: float) -> Any:
        calls.append((url, json.loads(body) if body else None))
        if url.endswith("/v1/querybatch"):
            queries = json.loads(body or b"{}")["queries"]
            return {
                "results": [
                    {"vulns": [{"id": record["id"]}]} if q["package"]["name"] == "torch" else {} for q in queries
                ]
            }
        return record

    found = load_advisories(
        [PinnedPackage("torch", "2.9.1"), PinnedPackage("numpy", "2.3.0")], live=LiveOsv(fetch=fetch)
    )
    assert found.source == "live"
    assert [a.id for a in found.advisories] == ["PYSEC-2026-2286"]
    assert calls[0][1]["queries"][1] == {"package": {"name": "torch", "ecosystem": "PyPI"}, "version": "2.9.1"}
    assert calls[1][0] == "https://api.osv.dev/v1/vulns/PYSEC-2026-2286"


def test_unreachable_osv_falls_back_to_the_snapshot_and_says_so() -> None:
    def unreachable(url: str, body: bytes | None, timeout_s: float) -> Any:
        raise OsvUnreachableError("URLError: no route to api.osv.dev")

    report = run_audit(pin_torch(LOCK, "2.9.1"), live=LiveOsv(fetch=unreachable))
    assert report.source == "snapshot"
    assert "live OSV unreachable: URLError: no route to api.osv.dev" in report.source_note
    assert [f.advisory for f in report.findings] == ["PYSEC-2026-2286"]
