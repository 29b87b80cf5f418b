"""Every console command as a shell runs it (a real process each), with the mistakes a new user makes: no
arguments, ``--help``, an unknown flag, empty and out-of-range option values. A usage error exits 2 with one line
on stderr that names the option; a runtime failure exits 1 with one line that says what to do; never a traceback,
never a file written. Commands that serve until Ctrl-C with no arguments (``relay up``, ``kokoro-server``,
``voice-agent``) are not run bare here: ``relay up``'s Ctrl-C is tests/cli/test_relay_commands.py's, the two
servers' is the last test below.
The processes run four at a time, with no AWS credentials and the instance metadata service off.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from relay_core import limits

BIN = Path(sys.executable).parent
ARN = "arn:aws:states:us-east-1:123456789012:stateMachine:kokoro-relay-smoke-test"
LONG_PROMPT = "x" * (limits.MAX_PROMPT_CHARS + 1)

# (command line, exit status, what the one line on stderr says)
CASES: list[tuple[list[str], int, str]] = [
    (["relay"], 2, "required: command"),
    (["relay", "--bogus"], 2, "relay: "),
    (["relay", "speak"], 2, "required: prompt"),
    (["relay", "speak", "Hi", "--bogus"], 2, "unrecognized arguments: --bogus"),
    (["relay", "speak", ""], 2, "'prompt' must not be empty"),
    (["relay", "speak", LONG_PROMPT], 2, f"the limit is {limits.MAX_PROMPT_CHARS}"),
    (["relay", "speak", "Hi", "--speed", ""], 2, "argument --speed"),
    (["relay", "speak", "Hi", "--speed", "9"], 2, "argument --speed"),
    (["relay", "speak", "Hi", "--voice", ""], 2, "argument --voice"),
    (["relay", "speak", "Hi", "--voice", "v" * (limits.MAX_VOICE_SPEC_CHARS + 1)], 2, "argument --voice"),
    (["relay", "speak", "Hi", "--voice", "jf_alpha:-1"], 2, "argument --voice"),
    (["relay", "speak", "Hi", "--lang", "klingon"], 2, "argument --lang"),
    (["relay", "chat", "Hi", "--lang", ""], 2, "argument --lang"),
    (["relay", "chat", "--local", "Hi", "--voice", "jf_alpha,,jm_kumo"], 2, "argument --voice"),
    (["relay", "speak", "Hi", "--mode", ""], 2, "argument --mode"),
    (["relay", "speak", "Hi", "--out", ""], 2, "argument --out"),
    (["relay", "speak", "Hi", "--out", "."], 2, "argument --out"),
    (["relay", "speak", "Hi", "--model", ""], 2, "argument --model"),
    (["relay", "speak", "Hi", "--model-id", ""], 2, "argument --model-id"),
    (["relay", "speak", "Hi", "--base-url", ""], 2, "argument --base-url"),
    (["relay", "speak", "Hi", "--rate", "0"], 2, "argument --rate"),
    (["relay", "speak", "Hi", "--session-id", "short"], 2, "argument --session-id"),
    (["relay", "speak", "Hi", "--tts-url", ""], 2, "argument --tts-url"),
    (["relay", "speak", "Hi", "--agent-url", ""], 2, "argument --agent-url"),
    (["relay", "speak", "Hi", "--agent-url", "http://127.0.0.1:9"], 1, "cannot reach the agent"),
    (["relay", "speak", "Hi.", "--model", "bedrock", "--model-id", "no.such-model"], 1, "reported model_failed"),
    (["relay", "up", "--bogus"], 2, "unrecognized arguments: --bogus"),
    (["relay", "up", "--web-port", "70000"], 2, "argument --web-port"),
    (["relay", "up", "--gateway-port", ""], 2, "argument --gateway-port"),
    (["relay", "up", "--aws-port", "-1"], 2, "argument --aws-port"),
    (["relay", "up", "--dynamodb-port", "x"], 2, "argument --dynamodb-port"),
    (["relay", "up", "--stage", ""], 2, "argument --stage"),
    (["relay", "up", "--user", ""], 2, "argument --user"),
    (["relay", "up", "--tts-transport", ""], 2, "argument --tts-transport"),
    (["relay", "chat"], 2, "--gateway-url --local is required"),
    (["relay", "chat", "--local"], 2, "give a prompt"),
    (["relay", "chat", "--local", ""], 2, "'prompt' must not be empty"),
    (["relay", "chat", "--local", "Hi", "--speed", "0"], 2, "argument --speed"),
    (["relay", "chat", "--local", "Hi", "--drop-after", "0"], 2, "argument --drop-after"),
    (["relay", "chat", "--gateway-url", "", "--token", "t", "Hi"], 2, "argument --gateway-url"),
    (["relay", "chat", "--gateway-url", "ws://127.0.0.1:9/local", "Hi"], 2, "needs --token"),
    (["relay", "chat", "--gateway-url", "ws://127.0.0.1:9/local", "--token", "", "Hi"], 2, "argument --token"),
    (["relay", "chat", "--gateway-url", "ws://127.0.0.1:9/local", "--token", "t", "Hi"], 1, "cannot reach the gateway"),
    (["relay", "ops"], 2, "required: workflow"),
    (["relay", "ops", "smoke-test", "--state-machine-arn", ""], 2, "argument --state-machine-arn"),
    (["relay", "ops", "smoke-test", "--region", ""], 2, "argument --region"),
    (["relay", "ops", "smoke-test", "--tts-url", ""], 2, "argument --tts-url"),
    (["relay", "ops", "smoke-test", "--state-machine-arn", ARN], 1, "check your AWS credentials"),
    (["relay", "ops", "audit", "--lock", ""], 2, "argument --lock"),
    (["relay", "ops", "cleanup", "--parts", ""], 2, "argument --parts"),
    (["relay", "ops", "cleanup", "--parts", "database"], 2, "unknown part(s) database"),
    (["relay", "deploy"], 2, "required: deploy_command"),
    (["relay", "deploy", "preflight", "--bogus"], 2, "unrecognized arguments: --bogus"),
    (["kokoro-server", "--bogus"], 2, "unrecognized arguments: --bogus"),
    (["kokoro-server", "--port", ""], 2, "argument --port"),
    (["kokoro-server", "--port", "70000"], 2, "port 70000"),
    (["kokoro-server", "--engine", ""], 2, "argument --engine"),
    (["kokoro-server", "--model", ""], 2, "argument --model"),
    (["kokoro-server", "--voices", ""], 2, "argument --voices"),
    (["kokoro-server", "--weights-dir", ""], 2, "argument --weights-dir"),
    (["kokoro-server", "--default-voice", ""], 2, "argument --default-voice"),
    (["kokoro-server", "--lang", ""], 2, "argument --lang"),
    (["kokoro-server", "--workers", "0"], 2, "workers=0"),
    (["kokoro-server", "--log-level", ""], 2, "argument --log-level"),
    (["kokoro-server", "serve", "--bogus"], 2, "unrecognized arguments: --bogus"),
    (["kokoro-server", "convert-weights", "--bogus"], 2, "unrecognized arguments: --bogus"),
    (["kokoro-server", "convert-weights", "--onnx", ""], 2, "argument --onnx"),
    (["voice-agent", "--bogus"], 2, "unrecognized arguments: --bogus"),
    (["voice-agent", "--port", ""], 2, "voice-agent: "),
    (["voice-agent", "--log-format", ""], 2, "voice-agent: "),
]
HELP = [["relay"], ["relay", "speak"], ["relay", "up"], ["relay", "chat"], ["relay", "ops"],
        ["relay", "ops", "smoke-test"], ["relay", "ops", "audit"], ["relay", "ops", "cleanup"], ["relay", "deploy"],
        ["relay", "deploy", "preflight"], ["kokoro-server"], ["kokoro-server", "serve"],
        ["kokoro-server", "convert-weights"], ["voice-agent"]]  # fmt: skip


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "VOICE_AGENT_", "KOKORO_"))}
    env.update(
        AWS_EC2_METADATA_DISABLED="true", AWS_CONFIG_FILE="/nonexistent", AWS_SHARED_CREDENTIALS_FILE="/nonexistent"
    )
    return env


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / argv[0]), *argv[1:]],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120, env=_env(), cwd=cwd, check=False,
    )  # fmt: skip


@pytest.mark.timeout(600)
def test_every_command_answers_mistakes_with_one_line_and_the_right_status(tmp_path: Path) -> None:
    with ThreadPoolExecutor(4) as pool:
        mistakes = list(pool.map(lambda case: _run(case[0], tmp_path), CASES))
        helps = list(pool.map(lambda argv: _run([*argv, "--help"], tmp_path), HELP))
    wrong = []
    for (argv, code, says), done in zip(CASES, mistakes, strict=True):
        lines = done.stderr.strip().splitlines()
        shown = " ".join(a if len(a) < 60 else a[:20] + "..." for a in argv)
        if done.returncode != code or "Traceback" in done.stderr or not lines or says not in lines[-1]:
            wrong.append(f"{shown}: exit {done.returncode}, stderr: {done.stderr[-600:]!r}")
        elif code == 2 and len(lines) != 1:
            wrong.append(f"{shown}: {len(lines)} lines on stderr: {done.stderr[-600:]!r}")
    for argv, done in zip(HELP, helps, strict=True):
        if done.returncode != 0 or not done.stdout.startswith("usage:") or done.stderr.strip():
            wrong.append(f"{' '.join(argv)} --help: exit {done.returncode}, {done.stderr[-300:]!r}")
    assert wrong == [], "\n".join(wrong)
    assert list(tmp_path.iterdir()) == []  # nothing written by any of them


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.slow
@pytest.mark.parametrize("command", ["kokoro-server", "voice-agent"])
def test_a_server_stops_on_two_quick_ctrl_c_with_exit_0_and_no_traceback(command: str, tmp_path: Path) -> None:
    """Ctrl-C reaches the whole process group, so a server gets it twice (and an impatient user adds more)."""
    port = _free_port()
    process = subprocess.Popen(
        [str(BIN / command), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env={**_env(), "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "http://127.0.0.1:9"},  # the speak model needs one
        cwd=tmp_path,
        start_new_session=True,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        for _ in range(2):
            os.killpg(process.pid, signal.SIGINT)
            time.sleep(0.05)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err[-2000:]
    assert "Traceback" not in err
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0  # nothing left listening
