"""``--tts-transport sagemaker`` on the commands that start the local stack: the whole gateway path with the agent
reaching the container through the local SageMaker front end (real SDK, TLS, HTTP/2, SigV4), as in AWS."""

from __future__ import annotations

import os
import subprocess
import sys
import wave
from pathlib import Path

import pytest

from relay_cli import cli
from relay_local.stack import TTS_TRANSPORTS

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def test_relay_chat_local_speaks_through_the_sagemaker_front_end(tmp_path: Path) -> None:
    out = tmp_path / "reply.wav"
    command = [sys.executable, "-m", "relay_cli.cli", "chat", "--local", "--tts-transport", "sagemaker"]
    done = subprocess.run(
        [*command, "--rate", "400", "--out", str(out), "Through SageMaker, as in AWS."],
        capture_output=True,
        text=True,
        timeout=280,
        cwd=REPO,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "via the local SageMaker front end https://" in done.stderr  # progress goes to stderr
    assert "Traceback" not in done.stderr and "ERROR" not in done.stderr
    assert "Through SageMaker, as in AWS." in done.stdout
    with wave.open(str(out)) as wav:
        assert wav.getframerate() == 24_000 and wav.getnframes() > 24_000 // 2


def test_an_unknown_transport_is_refused_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["up", "--tts-transport", "grpc"]) == 2  # a usage error: one line, nothing started
    err = capsys.readouterr().err
    assert "--tts-transport" in err and all(name in err for name in TTS_TRANSPORTS)
