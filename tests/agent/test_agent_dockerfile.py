"""The AgentCore image (containers/agent/Dockerfile): ARM64, port 8080, the agent CLI, and no ML runtime inside.

No Docker engine runs here, so the image is not built; the Dockerfile is parsed, and the dependency set its
``uv sync`` installs is checked with ``uv export`` on the real lock file.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "containers" / "agent" / "Dockerfile"
FORBIDDEN = ("torch", "onnxruntime", "kokoro")
"""Packages the agent image must never pull in (the TTS container's business, and gigabytes)."""


@pytest.fixture
def instructions(dockerfile: Any) -> list[tuple[str, str]]:
    parsed: list[tuple[str, str]] = dockerfile(DOCKERFILE)
    return parsed


def args_of(instructions: list[tuple[str, str]], keyword: str) -> list[str]:
    return [rest for key, rest in instructions if key == keyword]


def test_final_stage_is_an_arm64_python_312_slim_base(instructions: list[tuple[str, str]]) -> None:
    froms = args_of(instructions, "FROM")
    final = froms[-1]
    assert final.startswith("--platform=linux/arm64 ")
    assert "python:3.12-slim" in final
    assert all(stage.startswith("--platform=linux/arm64 ") for stage in froms)


def test_serves_the_agent_cli_on_all_interfaces_port_8080_as_non_root(instructions: list[tuple[str, str]]) -> None:
    assert args_of(instructions, "EXPOSE") == ["8080"]
    (entrypoint,) = args_of(instructions, "ENTRYPOINT")
    (cmd,) = args_of(instructions, "CMD")
    command = json.loads(entrypoint) + json.loads(cmd)
    assert command == ["voice-agent", "--host", "0.0.0.0", "--port", "8080"]
    (user,) = args_of(instructions, "USER")
    assert user not in ("root", "0")
    assert instructions[-1][0] == "CMD"
    keys = [key for key, _ in instructions]
    assert keys.index("USER") > max(i for i, key in enumerate(keys) if key == "RUN")


def test_installs_only_the_voice_agent_member_from_the_lock(instructions: list[tuple[str, str]]) -> None:
    runs = " ".join(args_of(instructions, "RUN"))
    assert "uv sync --frozen --no-dev --no-editable --package voice-agent" in runs
    assert not any(name in runs for name in FORBIDDEN)
    assert "--extra" not in runs and "--all-packages" not in runs
    copied = [rest.split()[0] for rest in args_of(instructions, "COPY") if not rest.startswith("--from")]
    # The Kokoro container's sources stay out of the image; only its pyproject.toml (for the workspace) goes in.
    assert "containers" not in copied and "containers/kokoro" not in copied
    assert "containers/agent" in copied and "core" in copied


def test_the_agents_locked_dependencies_hold_no_ml_runtime() -> None:
    uv = shutil.which("uv")
    if uv is None:
        pytest.fail("uv is not on PATH; the dependency check needs it (it is how the image installs)")
    result = subprocess.run(
        [uv, "export", "--package", "voice-agent", "--frozen", "--no-dev", "--no-hashes", "--no-header"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    names = {
        re.split(r"[=<>~!\[; ]", line.strip())[0].lower()
        for line in result.stdout.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    }
    assert "strands-agents" in names and "bedrock-agentcore" in names
    assert "aws-sdk-sagemaker-runtime-http2" in names and "awscrt" in names
    assert not {name for name in names if any(bad in name for bad in FORBIDDEN)}
