"""Helpers of the preflight tests: real botocore clients with fake credentials, answered by botocore's Stubber."""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
from botocore.stub import Stubber

REGION = "us-east-1"
ACCOUNT = "111122223333"
Stubbed = Callable[[str], tuple[Any, Stubber]]
"""The ``stubbed`` fixture: ``stubbed("ssm")`` → ``(client, stubber)``."""


def aws_client(service: str, region: str = REGION) -> Any:
    """A real client (it validates request parameters and response shapes) that never reaches AWS once stubbed."""
    session: Any = boto3.session.Session(
        aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret", region_name=region
    )
    return session.client(service)


BUILDERS = (
    "NAME/NODE DRIVER/ENDPOINT STATUS PLATFORMS\ndefault* docker\n  default default running linux/amd64, linux/arm64*"
)


def fake_docker(
    directory: Path,
    *,
    info: str = "27.3.1 linux/x86_64",
    info_rc: int = 0,
    buildx: str = BUILDERS,
    buildx_rc: int = 0,
) -> str:
    """A ``docker`` script in ``directory`` answering ``info`` and ``buildx ls`` as told; returns its path."""
    script = directory / "docker"
    script.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = info ]; then\n'
        f"  printf '%s\\n' '{info}'; [ {info_rc} -eq 0 ] || echo 'Cannot connect to the Docker daemon' >&2\n"
        f"  exit {info_rc}\n"
        "fi\n"
        f"printf '%s\\n' '{buildx}'\n"
        f"exit {buildx_rc}\n",
        encoding="utf-8",
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)
