"""The ``relay up`` and ``relay chat`` commands as a user runs them: real processes, the real stack.

``relay up`` starts on free ports and prints its URLs; ``relay chat`` talks to it through the gateway (a reply's
audio lands in a WAV; a refused token exits non-zero with one line and writes nothing); Ctrl-C (SIGINT) stops
``relay up`` with exit code 0 and leaves no process of it behind. ``relay up`` is a real process; ``relay chat``
runs in-process through the same ``relay_local.cli.main`` entry point (a second interpreter start-up would cost
more than the turn itself on a busy machine).
"""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import wave
from pathlib import Path

import httpx
import psutil
import pytest

from relay_local.cli import main

RELAY = [sys.executable, "-c", "import sys; from relay_local.cli import main; sys.exit(main())"]
START_DEADLINE_S = 240.0
"""Loading Kokoro-82M on a busy 2-core machine takes most of this."""


def _lines(stream: object, into: queue.Queue[str]) -> None:
    for line in iter(stream.readline, ""):  # type: ignore[attr-defined]
        into.put(line)


def _wait_for(lines: queue.Queue[str], seen: list[str], pattern: str, deadline: float) -> re.Match[str]:
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
        seen.append(line)
        if match := re.search(pattern, line):
            return match
    raise AssertionError(f"relay up did not print {pattern!r} in time; it printed: {''.join(seen)[-2000:]}")


def _chat(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``relay chat ARGS`` through the CLI's entry point: (exit code, stdout, stderr)."""
    capsys.readouterr()
    code = main(["chat", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONWARNINGS": "ignore"}


@pytest.mark.timeout(600)
def test_relay_up_serves_relay_chat_and_stops_cleanly_on_ctrl_c(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    up = subprocess.Popen(
        [*RELAY, "up", "--web-port", "0", "--gateway-port", "0", "--aws-port", "0"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_env(),
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_lines, args=(up.stdout, lines), daemon=True).start()
    seen: list[str] = []
    try:
        deadline = time.monotonic() + START_DEADLINE_S
        web_url = _wait_for(lines, seen, r"web client:\s+(http://127\.0\.0\.1:\d+)", deadline).group(1)
        gateway_url = _wait_for(lines, seen, r"gateway:\s+(ws://\S+)", deadline).group(1)
        token = _wait_for(lines, seen, r"dev token \([^)]*\): (\S+)", deadline).group(1)
        assert any("loading Kokoro" in line for line in seen)  # start-up shows progress

        config = httpx.get(f"{web_url}/config.json", timeout=30).json()
        assert config["gateway_url"] == gateway_url and config["token"] and config["agent_url"].startswith(web_url)

        target = ("--gateway-url", gateway_url)
        reply_wav = tmp_path / "reply.wav"
        code, out, err = _chat(*target, "--token", token, "--out", str(reply_wav), "Hello there.", capsys=capsys)
        assert code == 0, f"{err}\nrelay up said:\n{''.join(seen)[-3000:]}"
        assert "Hello there." in out
        with wave.open(str(reply_wav)) as wav:
            assert wav.getframerate() == 24000 and wav.getnframes() > 24000 // 4

        refused_wav = tmp_path / "no.wav"
        code, out, err = _chat(*target, "--token", "not-a-token", "--out", str(refused_wav), "Hi", capsys=capsys)
        assert code != 0
        assert err.strip().splitlines() == [err.strip()]  # one line ...
        assert err.startswith("relay chat: the gateway refused the connection (HTTP 401)")  # ... that says why
        assert not refused_wav.exists()

        family = [psutil.Process(up.pid), *psutil.Process(up.pid).children(recursive=True)]
        up.send_signal(signal.SIGINT)
        assert up.wait(timeout=60) == 0
        _wait_for(lines, seen, r"^stopped\.", time.monotonic() + 5)
        _gone, alive = psutil.wait_procs(family, timeout=10)
        assert alive == []
    finally:
        if up.poll() is None:
            up.kill()
            up.wait(timeout=10)
