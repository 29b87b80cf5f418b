"""``relay deploy preflight`` as a deployer runs it, on a machine with no AWS credentials and no Docker daemon:
one line per check, a verdict, exit 1, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.infra.preflight.stubs import fake_docker

CHECKS = [
    "credentials",
    "cdk-bootstrap",
    "quota",
    "instance-type",
    "bedrock-model",
    "transaction-search",
    "lambda-concurrency",
    "inference-ami",
    "docker",
    "cost",
]


def _without_aws(tmp_path: Path) -> dict[str, str]:
    """The environment minus every AWS setting, with config files that do not exist and no instance metadata."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_docker(bin_dir, info="", info_rc=1)  # a client whose daemon does not answer, whatever this machine has
    env.update(
        HOME=str(tmp_path),
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        AWS_CONFIG_FILE=str(tmp_path / "no-config"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "no-credentials"),
        AWS_EC2_METADATA_DISABLED="true",
    )
    return env


def test_preflight_without_credentials_fails_cleanly(tmp_path: Path) -> None:
    relay = Path(sys.executable).with_name("relay")
    done = subprocess.run(
        [str(relay), "deploy", "preflight"],
        env=_without_aws(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[1] for line in lines[:-1]] == CHECKS
    assert lines[0] == (
        "✗ credentials        no AWS credentials found; fix: configure credentials for the target account (aws "
        "configure, aws sso login, or AWS_PROFILE / AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY), then run make "
        "preflight again"
    )
    assert all(line.startswith("- ") for line in lines[1:7])
    assert lines[8].startswith("✗ docker")
    assert lines[9].startswith("✓ cost")
    assert lines[-1].startswith(
        "preflight failed: credentials, cdk-bootstrap, quota, instance-type, bedrock-model, transaction-search, "
        "lambda-concurrency, "
        "docker."
    )
