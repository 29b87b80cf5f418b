"""The ``relay up`` and ``relay chat`` commands as a user runs them: real processes, the real stack.

``relay up`` starts on free ports and prints its URLs; ``relay chat`` talks to it through the gateway (a reply's
audio lands in a WAV; a refused token exits non-zero with one line and writes nothing); Ctrl-C stops ``relay up``
with exit code 0 and leaves no process of it behind. ``relay up`` runs as the README says, under ``uv run`` (and
``make up``), in a process group of its own, and Ctrl-C is what a terminal sends: SIGINT to the whole group, twice
in quick succession as an impatient user presses it (``uv run`` passes each on again, so relay gets four).
``relay chat`` runs in-process through the same ``relay_cli.cli.main`` entry point (a second interpreter start-up
would cost more than the turn itself on a busy machine).
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import wave
from pathlib import Path

import httpx
import psutil
import pytest

from relay_cli.cli import main

REPO_ROOT = Path(__file__).resolve().parents[2]
START_DEADLINE_S = 240.0
"""Loading Kokoro-82M on a busy 2-core machine takes most of this."""
FREE_PORTS = ["--web-port", "0", "--gateway-port", "0", "--aws-port", "0"]


def _uv_run_relay(cwd: Path) -> list[str]:
    """``uv run relay`` as the README has it (uv sets ``$UV`` for what it runs, ``make test`` included); the
    environment's own ``relay`` script where no uv is found. ``--no-sync``: the test must not change the venv."""
    uv = os.environ.get("UV") or shutil.which("uv")
    if uv is None or subprocess.run([uv, "--version"], capture_output=True, cwd=cwd, check=False).returncode != 0:
        return [str(Path(sys.executable).with_name("relay"))]  # e.g. a pyenv shim with no uv for this Python
    return [uv, "run", "--project", str(REPO_ROOT), "--no-sync", "relay"]


def _lines(stream: object, into: queue.Queue[str]) -> None:
    for line in iter(stream.readline, ""):  # type: ignore[attr-defined]
        into.put(line)


def _wait_for(
    lines: queue.Queue[str],
    seen: list[str],
    pattern: str,
    deadline: float,
    process: subprocess.Popen[str] | None = None,
) -> re.Match[str]:
    """The first line matching ``pattern``; fails at ``deadline``, or once ``process`` has ended and said all."""
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(0.0, min(1.0, deadline - time.monotonic())))
        except queue.Empty:
            if process is not None and process.poll() is not None and lines.empty():
                break
            continue
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
    """This environment, unbuffered, with no sync by ``uv run`` and none of an outer make's settings (``make
    test`` runs the suite; its jobserver is not for the ``make up`` started here)."""
    env = {k: v for k, v in os.environ.items() if k not in {"MAKEFLAGS", "MFLAGS", "MAKELEVEL"}}
    return {**env, "PYTHONUNBUFFERED": "1", "PYTHONWARNINGS": "ignore", "UV_NO_SYNC": "1"}


def _shell_env() -> dict[str, str]:
    """:func:`_env` as a user's shell has it: this virtual environment not activated (the Makefile's own
    ``python3 -m uv`` must find the machine's Python, as it does for a user)."""
    venv_bin = str(Path(sys.executable).parent)
    env = {k: v for k, v in _env().items() if k != "VIRTUAL_ENV"}
    env["PATH"] = os.pathsep.join(part for part in env.get("PATH", "").split(os.pathsep) if part != venv_bin)
    return env


def _start_in_own_group(
    command: list[str], cwd: Path, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], queue.Queue[str]]:
    """Start ``command`` as a shell starts a foreground job: a process group of its own; its output line by line."""
    process = subprocess.Popen(
        command,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env or _env(),
        start_new_session=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_lines, args=(process.stdout, lines), daemon=True).start()
    return process, lines


def _ctrl_c_twice(process: subprocess.Popen[str]) -> list[psutil.Process]:
    """What an impatient user's two Ctrl-Cs do: SIGINT to the whole process group, twice, 50 ms apart. Returns the
    processes that were in the group, to check that none survives."""
    family = [psutil.Process(process.pid), *psutil.Process(process.pid).children(recursive=True)]
    os.killpg(process.pid, signal.SIGINT)
    time.sleep(0.05)
    os.killpg(process.pid, signal.SIGINT)
    return family


def _listening(url: str) -> bool:
    host, port = re.sub(r"^\w+://", "", url).split("/")[0].split(":")
    with socket.socket() as sock:
        sock.settimeout(2.0)
        return sock.connect_ex((host, int(port))) == 0


def _output(lines: queue.Queue[str], seen: list[str]) -> str:
    while not lines.empty():
        seen.append(lines.get())
    return "".join(seen)


def _kill_group(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


@pytest.mark.timeout(600)
def test_relay_up_serves_relay_chat_and_stops_cleanly_on_ctrl_c(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    up, lines = _start_in_own_group([*_uv_run_relay(tmp_path), "up", *FREE_PORTS], tmp_path)
    seen: list[str] = []
    try:
        deadline = time.monotonic() + START_DEADLINE_S
        web_url = _wait_for(lines, seen, r"web client:\s+(http://127\.0\.0\.1:\d+)", deadline, up).group(1)
        gateway_url = _wait_for(lines, seen, r"gateway:\s+(ws://\S+)", deadline, up).group(1)
        token = _wait_for(lines, seen, r"dev token \([^)]*\): (\S+)", deadline, up).group(1)
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

        family = _ctrl_c_twice(up)
        assert up.wait(timeout=60) == 0, _output(lines, seen)[-3000:]
        _wait_for(lines, seen, r"^stopped\.", time.monotonic() + 5)
        assert "Traceback" not in _output(lines, seen)
        _gone, alive = psutil.wait_procs(family, timeout=10)
        assert alive == []
        assert not _listening(web_url) and not _listening(gateway_url)
    finally:
        _kill_group(up)


@pytest.mark.timeout(600)
def test_make_up_stops_on_two_ctrl_c_with_no_traceback_and_nothing_listening(tmp_path: Path) -> None:
    """``make up`` (its ``setup`` taken as done: ``-o setup``; free ports through ``UP_ARGS``). make itself then
    ends by the interrupt, as GNU make does for every interrupted recipe; relay under it stops cleanly."""
    make = shutil.which("make")
    assert make is not None, "make is needed to run `make up`"
    up, lines = _start_in_own_group(
        [make, "-s", "-C", str(REPO_ROOT), "-o", "setup", "up", f"UP_ARGS={' '.join(FREE_PORTS)}"],
        tmp_path,
        _shell_env(),
    )
    seen: list[str] = []
    try:
        deadline = time.monotonic() + START_DEADLINE_S
        web_url = _wait_for(lines, seen, r"web client:\s+(http://127\.0\.0\.1:\d+)", deadline, up).group(1)
        gateway_url = _wait_for(lines, seen, r"gateway:\s+(ws://\S+)", deadline, up).group(1)
        _wait_for(lines, seen, r"Ctrl-C stops everything", deadline, up)
        family = _ctrl_c_twice(up)
        assert up.wait(timeout=60) in (0, -signal.SIGINT), _output(lines, seen)[-3000:]
        _gone, alive = psutil.wait_procs(family, timeout=10)
        assert alive == []
        printed = _output(lines, seen)
        assert "\nstopped.\n" in printed and "Traceback" not in printed, printed[-3000:]
        assert not _listening(web_url) and not _listening(gateway_url)
    finally:
        _kill_group(up)
