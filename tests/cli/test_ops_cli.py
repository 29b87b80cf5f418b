"""``relay ops``: the audit's verdict and exit status on this workspace's lock and on a vulnerable pin; the
cleanup's part selection; a local cleanup run under moto (its own process) that ends with nothing billable."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from relay_cli.cli import main
from relay_cli.ops_cli import cleanup_request

REPO_ROOT = Path(__file__).resolve().parents[2]
RELAY = [sys.executable, "-c", "import sys; from relay_cli.cli import main; sys.exit(main())"]


def _local_ops(*args: str) -> subprocess.CompletedProcess[str]:
    """``relay ops <args>`` in its own process (for moto's process-wide backend), with no AWS or moto variables of
    this process: a simulated deployment, which must not meet another local stack's (the suite's lives in this one)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MOTO_"))}
    env.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")
    return subprocess.run([*RELAY, "ops", *args], capture_output=True, text=True, timeout=240, env=env, check=False)


def torch_pinned(tmp_path: Path, version: str) -> Path:
    text = (REPO_ROOT / "uv.lock").read_text()
    marker = 'name = "torch"\nversion = "'
    start = text.index(marker) + len(marker)
    lock = tmp_path / "uv.lock"
    lock.write_text(text[:start] + version + text[text.index('"', start) :])
    return lock


def test_audit_passes_on_the_workspace_lock(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ops", "audit", "--offline", "--lock", str(REPO_ROOT / "uv.lock")]) == 0
    assert "No known advisory affects a pinned dependency." in capsys.readouterr().out


def test_audit_fails_on_torch_below_2_10_naming_advisory_and_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ops", "audit", "--offline", "--json", "--lock", str(torch_pinned(tmp_path, "2.9.1"))]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False
    assert [(f["package"], f["advisory"], f["fixed_versions"]) for f in report["findings"]] == [
        ("torch", "PYSEC-2026-2286", ["2.10.0"])
    ]


def test_audit_of_a_missing_lock_is_a_usage_error(tmp_path: Path) -> None:
    assert main(["ops", "audit", "--offline", "--lock", str(tmp_path / "nope.lock")]) == 2


def test_cleanup_parts_selection() -> None:
    def request(**kwargs: object) -> dict[str, object]:
        return cleanup_request(argparse.Namespace(**{"all": False, "parts": None, "dry_run": False, **kwargs}))

    assert request() == {"dry_run": False}
    assert request(all=True)["parts"] == dict.fromkeys(
        ("agent_runtime", "sagemaker_endpoint", "weights_bucket", "history_bucket", "ecr_repository"), True
    )
    assert request(parts="weights_bucket,history_bucket", dry_run=True) == {
        "dry_run": True,
        "parts": {
            "agent_runtime": False,
            "sagemaker_endpoint": False,
            "weights_bucket": True,
            "history_bucket": True,
            "ecr_repository": False,
        },
    }
    with pytest.raises(ValueError, match="unknown part"):
        request(parts="database")


def test_local_cleanup_of_everything_leaves_nothing_billable() -> None:
    """Run as a user runs it, in a process of its own: the local cleanup holds moto's process-wide backend for its
    simulated deployment, which must not meet another local stack's (the suite's relay stack lives in this one)."""
    done = _local_ops("cleanup", "--local", "--all", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["nothing_billable_left"] is True
    assert report["done"] is True
    assert "-> EmptyWeightsBucket" in done.stderr


def test_local_erase_user_deletes_the_user_and_keeps_the_other() -> None:
    """``relay ops erase-user --local`` as a user runs it (its own process, for moto's process-wide backend): the
    erase-user workflow over a simulated deployment; the user's conversations and items go, the other user's stay."""
    done = _local_ops("erase-user", "--local", "--user-id", "sub-0042", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["done"] is True and report["found"] is True
    assert (report["conversations"], report["turn_records"], report["connection_items"]) == (2, 2, 1)
    assert "sub-0042" not in done.stdout, "the report names the user by key only"
    assert "left of the user's history: 0 objects; another-user's: 8 of 8 kept" in done.stderr
    assert "-> Erase" in done.stderr


def test_erase_user_needs_a_user_id(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ops", "erase-user", "--local"]) == 2
    assert "--user-id" in capsys.readouterr().err
