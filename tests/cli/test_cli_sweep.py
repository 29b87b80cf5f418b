"""Every console command with the mistakes a new user makes: no arguments, ``--help``, an unknown flag, empty and
out-of-range option values. A usage error exits 2 with one line on stderr that names the option; a runtime failure
exits 1 with one line that says what to do; never a traceback, never a file written. Commands that serve until
Ctrl-C with no arguments (``relay up``, ``kokoro-server``, ``voice-agent``) are not run bare here: ``relay up``'s
Ctrl-C is tests/cli/test_relay_commands.py's, the two servers' is the last test below.

Sized to what each part proves: every mistake that gets past the option parser, and one parser mistake and the
help of each executable, run as a shell runs them (a real process each, four at a time, with no AWS credentials
and the instance metadata service off): the console scripts' exit status, stderr and environment. The other
option mistakes are refused by the parser alone, the same code in every process: they run in this process,
through each command's own parser (a process each would cost an interpreter start for one argparse check).
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
PROCESS_CASES: list[tuple[list[str], int, str]] = [
    (["relay", "--bogus"], 2, "relay: "),
    (["relay", "speak", ""], 2, "'prompt' must not be empty"),
    (["relay", "speak", LONG_PROMPT], 2, f"the limit is {limits.MAX_PROMPT_CHARS}"),
    (["relay", "speak", "Hi", "--agent-url", "http://127.0.0.1:9"], 1, "cannot reach the agent"),
    (["relay", "speak", "Hi.", "--model", "bedrock", "--model-id", "no.such-model"], 1, "reported model_failed"),
    (["relay", "chat", "--local"], 2, "give a prompt"),
    (["relay", "chat", "--local", ""], 2, "'prompt' must not be empty"),
    (["relay", "chat", "--gateway-url", "ws://127.0.0.1:9/local", "Hi"], 2, "needs --token"),
    (["relay", "chat", "--gateway-url", "ws://127.0.0.1:9/local", "--token", "t", "Hi"], 1, "cannot reach the gateway"),
    (["relay", "ops", "smoke-test", "--state-machine-arn", ARN], 1, "check your AWS credentials"),
    (["relay", "ops", "cleanup", "--parts", "database"], 2, "unknown part(s) database"),
    (["kokoro-server", "--bogus"], 2, "unrecognized arguments: --bogus"),
    (["kokoro-server", "convert-weights", "--bogus"], 2, "unrecognized arguments: --bogus"),
    (["kokoro-server", "convert-weights", "--onnx", ""], 2, "argument --onnx"),
    (["voice-agent", "--bogus"], 2, "unrecognized arguments: --bogus"),
    (["voice-agent", "--port", ""], 2, "voice-agent: "),
    (["voice-agent", "--log-format", ""], 2, "voice-agent: "),
]
"""Run as processes: every mistake that gets past the option parser (the command's own checks, runtime failures),
one parser mistake of each executable, and the subcommand that parses its own options."""
PARSER_CASES: list[tuple[list[str], int, str]] = [
    (["relay"], 2, "required: command"),
    (["relay", "speak"], 2, "required: prompt"),
    (["relay", "speak", "Hi", "--bogus"], 2, "unrecognized arguments: --bogus"),
    (["relay", "speak", "Hi", "--speed", ""], 2, "argument --speed"),
    (["relay", "ops", "erase-user", "--user-id", ""], 2, "argument --user-id"),
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
    (["relay", "up", "--bogus"], 2, "unrecognized arguments: --bogus"),
    (["relay", "up", "--web-port", "70000"], 2, "argument --web-port"),
    (["relay", "up", "--gateway-port", ""], 2, "argument --gateway-port"),
    (["relay", "up", "--aws-port", "-1"], 2, "argument --aws-port"),
    (["relay", "up", "--dynamodb-port", "x"], 2, "argument --dynamodb-port"),
    (["relay", "up", "--stage", ""], 2, "argument --stage"),
    (["relay", "up", "--user", ""], 2, "argument --user"),
    (["relay", "up", "--tts-transport", ""], 2, "argument --tts-transport"),
    (["relay", "chat"], 2, "--gateway-url --local is required"),
    (["relay", "chat", "--local", "Hi", "--speed", "0"], 2, "argument --speed"),
    (["relay", "chat", "--local", "Hi", "--drop-after", "0"], 2, "argument --drop-after"),
    (["relay", "chat", "--gateway-url", "", "--token", "t", "Hi"], 2, "argument --gateway-url"),
    (["relay", "chat", "--gateway-url", "ws://127.0.0.1:9/local", "--token", "", "Hi"], 2, "argument --token"),
    (["relay", "ops"], 2, "required: workflow"),
    (["relay", "ops", "smoke-test", "--state-machine-arn", ""], 2, "argument --state-machine-arn"),
    (["relay", "ops", "smoke-test", "--region", ""], 2, "argument --region"),
    (["relay", "ops", "smoke-test", "--tts-url", ""], 2, "argument --tts-url"),
    (["relay", "ops", "audit", "--lock", ""], 2, "argument --lock"),
    (["relay", "ops", "cleanup", "--parts", ""], 2, "argument --parts"),
    (["relay", "deploy"], 2, "required: deploy_command"),
    (["relay", "deploy", "preflight", "--bogus"], 2, "unrecognized arguments: --bogus"),
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
]
"""Refused by the command's option parser alone (status 2, one line naming the option): run in this process."""
PROCESS_HELP = [["relay"], ["kokoro-server"], ["kokoro-server", "convert-weights"], ["voice-agent"]]
"""Each executable's help, and that of the subcommand with a parser of its own, as processes."""
PARSER_HELP = [["relay", "speak"], ["relay", "up"], ["relay", "chat"], ["relay", "ops"],
               ["relay", "ops", "smoke-test"], ["relay", "ops", "audit"], ["relay", "ops", "cleanup"],
               ["relay", "ops", "erase-user"],
               ["relay", "deploy"], ["relay", "deploy", "preflight"], ["kokoro-server", "serve"]]  # fmt: skip
"""The other help pages, through the parsers in this process."""


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


def _wrong_answers(
    cases: list[tuple[list[str], int, str]],
    answers: list[tuple[int, str]],
    helps: list[list[str]],
    help_answers: list[tuple[int, str, str]],
) -> list[str]:
    """What the answers (exit status, stderr) to ``cases`` and (exit status, stdout, stderr) to ``helps`` got
    wrong: a status, a traceback, more or less than the one line that says what, a help page not on stdout."""
    wrong = []
    for (argv, code, says), (returncode, stderr) in zip(cases, answers, strict=True):
        lines = stderr.strip().splitlines()
        shown = " ".join(a if len(a) < 60 else a[:20] + "..." for a in argv)
        if returncode != code or "Traceback" in stderr or not lines or says not in lines[-1]:
            wrong.append(f"{shown}: exit {returncode}, stderr: {stderr[-600:]!r}")
        elif code == 2 and len(lines) != 1:
            wrong.append(f"{shown}: {len(lines)} lines on stderr: {stderr[-600:]!r}")
    for argv, (returncode, stdout, stderr) in zip(helps, help_answers, strict=True):
        if returncode != 0 or not stdout.startswith("usage:") or stderr.strip():
            wrong.append(f"{' '.join(argv)} --help: exit {returncode}, {stderr[-300:]!r}")
    return wrong


@pytest.mark.timeout(600)
def test_every_command_answers_mistakes_with_one_line_and_the_right_status(tmp_path: Path) -> None:
    with ThreadPoolExecutor(4) as pool:
        mistakes = list(pool.map(lambda case: _run(case[0], tmp_path), PROCESS_CASES))
        helps = list(pool.map(lambda argv: _run([*argv, "--help"], tmp_path), PROCESS_HELP))
    wrong = _wrong_answers(
        PROCESS_CASES,
        [(done.returncode, done.stderr) for done in mistakes],
        PROCESS_HELP,
        [(done.returncode, done.stdout, done.stderr) for done in helps],
    )
    assert wrong == [], "\n".join(wrong)
    assert list(tmp_path.iterdir()) == []  # nothing written by any of them


def _parse(argv: list[str]) -> None:
    """Only the option parsing of ``argv``, as its executable's entry point parses it (kokoro-server: its serving
    command line, settings from no KOKORO_* variable, as :func:`_env` gives the processes)."""
    from kokoro_server.cli import parse_command  # noqa: PLC0415 - the servers' parsers, not the servers
    from relay_cli.cli import build_parser as relay_parser  # noqa: PLC0415
    from voice_agent.cli import build_parser as agent_parser  # noqa: PLC0415

    command, args = argv[0], argv[1:]
    if command == "relay":
        relay_parser().parse_args(args)
    elif command == "kokoro-server":
        parse_command(args, {})
    else:
        assert command == "voice-agent", command
        agent_parser().parse_args(args)


def test_every_option_refuses_a_bad_value_with_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [k for k in os.environ if k.startswith(("AWS_", "VOICE_AGENT_", "KOKORO_"))]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)

    def answer(argv: list[str]) -> tuple[int, str, str]:
        capsys.readouterr()
        try:
            _parse(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
        else:
            code = -1  # parsed: the mistake got past the parser (a case for PROCESS_CASES)
        out, err = capsys.readouterr()
        return code, out, err

    mistakes = [answer(argv) for argv, _, _ in PARSER_CASES]
    helps = [answer([*argv, "--help"]) for argv in PARSER_HELP]
    wrong = _wrong_answers(PARSER_CASES, [(code, err) for code, _, err in mistakes], PARSER_HELP, helps)
    assert wrong == [], "\n".join(wrong)
    assert list(tmp_path.iterdir()) == []


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
