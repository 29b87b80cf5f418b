"""The preflight command in-process: context reaches the checks; a bad config value or an unknown profile is one
line, exit 1."""

from __future__ import annotations

import argparse
import io
import os
from pathlib import Path

import pytest
from tests.infra.preflight.stubs import fake_docker

from relay_infra.preflight.cli import add_arguments, run


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


def test_an_invalid_context_value_is_one_config_line() -> None:
    out = io.StringIO()
    assert run(_args("-c", "relay:ttsMinInstances=0"), out) == 1
    lines = out.getvalue().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("✗ config")
    assert "relay:ttsMinInstances" in lines[0]
    assert "fix:" in lines[0]


def test_an_unknown_profile_is_one_credentials_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    out = io.StringIO()
    assert run(_args("--profile", "no-such-profile"), out) == 1
    lines = out.getvalue().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("✗ credentials")
    assert "no-such-profile" in lines[0]


def _no_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in [key for key in os.environ if key.startswith("AWS_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_context_overrides_reach_the_checks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _no_aws(monkeypatch, tmp_path)
    args = _args(
        "-c",
        "relay:ttsMinInstances=2",
        "--context=relay:ttsInstanceType=ml.g5.2xlarge",
        "--docker",
        fake_docker(tmp_path),
    )
    out = io.StringIO()
    assert run(args, out) == 1  # no credentials
    lines = out.getvalue().splitlines()
    assert len(lines) == 11  # ten checks and the verdict
    cost = next(line for line in lines if line.startswith("✓ cost"))
    assert "2 x ml.g5.2xlarge at $1.515/h = $3.03/h idle" in cost
    assert next(line for line in lines if line.startswith("✓ docker"))
