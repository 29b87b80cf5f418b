"""Every console command with the mistakes a new user makes: no arguments, ``--help``, an unknown flag, empty and
out-of-range option values. A usage error exits 2 with one line on stderr that names the option; a runtime failure
exits 1 with one line that says what to do; never a traceback, never a file written. Commands that serve until
Ctrl-C with no arguments (``relay up``, ``kokoro-server``, ``voice-agent``) are not run bare here: ``relay up``'s
Ctrl-C is tests/cli/test_relay_commands.py's, the two servers' is the last test below.

Sized to what each part proves: one parser mistake and the help of each executable and of the subcommand that
parses its own options, and the mistakes that fail at run time (an agent, a gateway or AWS out of reach, a model
that refuses) or read stdin, run as a shell runs them (a real process each, four at a time, with no AWS
credentials and the instance metadata service off): the console scripts' exit status, stderr and environment.
The other mistakes run in this process (a process each would cost an interpreter start for what the process adds
nothing to): the option mistakes through each command's own parser, the mistakes its own checks catch after
parsing through the executable's ``main(argv)`` (what its console script calls), with what it logs at WARNING
and above (what would reach stderr) counted as lines of stderr.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import pytest

from relay_core import limits

BIN = Path(sys.executable).parent
ARN = "arn:aws:states:us-east-1:123456789012:stateMachine:kokoro-relay-smoke-test"
LONG_PROMPT = "x" * (limits.MAX_PROMPT_CHARS + 1)

# (command line, exit status, what the one line on stderr says)
PROCESS_CASES: list[tuple[list[str], int, str]] = [
    (["relay", "--bogus"], 2, "relay: "),
    (["relay", "speak", "Hi.", "--model", "bedrock", "--model-id", "no.such-model"], 1, "reported model_failed"),
    (["relay", "chat", "--local"], 2, "give a prompt"),
    (["relay", "chat", "--gateway-url", "ws://127.0.0.1:9/local", "--token", "t", "Hi"], 1, "cannot reach the gateway"),
    (["relay", "ops", "smoke-test", "--state-machine-arn", ARN], 1, "check your AWS credentials"),
    (["kokoro-server", "--bogus"], 2, "unrecognized arguments: --bogus"),
    (["kokoro-server", "convert-weights", "--bogus"], 2, "unrecognized arguments: --bogus"),
    (["voice-agent", "--bogus"], 2, "unrecognized arguments: --bogus"),
]
"""Run as processes: one parser mistake of each executable and of the subcommand that parses its own options; the
runtime failures (what is out of reach, a model that refuses: the stack, the network, AWS's client as a process
meets them) and the prompt that ``relay chat`` reads from stdin."""
MAIN_CASES: list[tuple[list[str], int, str]] = [
    (["relay", "speak", ""], 2, "'prompt' must not be empty"),
    (["relay", "speak", LONG_PROMPT], 2, f"the limit is {limits.MAX_PROMPT_CHARS}"),
    (["relay", "speak", "Hi", "--agent-url", "http://127.0.0.1:9"], 1, "cannot reach the agent"),
    (["relay", "chat", "--local", ""], 2, "'prompt' must not be empty"),
    (["relay", "chat", "--gateway-url", "ws://127.0.0.1:9/local", "Hi"], 2, "needs --token"),
    (["relay", "ops", "cleanup", "--parts", "database"], 2, "unknown part(s) database"),
    (["voice-agent", "--port", ""], 2, "voice-agent: "),
    (["voice-agent", "--log-format", ""], 2, "voice-agent: "),
]
"""Past the option parser, caught by the command's own checks: run through the executable's ``main(argv)`` in
this process."""
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
    (["kokoro-server", "convert-weights", "--onnx", ""], 2, "argument --onnx"),
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
    command line, settings from no KOKORO_* variable, as :func:`_env` gives the processes; its ``convert-weights``:
    the converter's own parser)."""
    from kokoro_server.cli import parse_command  # noqa: PLC0415 - the servers' parsers, not the servers
    from kokoro_server.convert.cli import build_parser as convert_parser  # noqa: PLC0415
    from relay_cli.cli import build_parser as relay_parser  # noqa: PLC0415
    from voice_agent.cli import build_parser as agent_parser  # noqa: PLC0415

    command, args = argv[0], argv[1:]
    if command == "relay":
        relay_parser().parse_args(args)
    elif command == "kokoro-server" and args[:1] == ["convert-weights"]:
        convert_parser().parse_args(args[1:])
    elif command == "kokoro-server":
        parse_command(args, {})
    else:
        assert command == "voice-agent", command
        agent_parser().parse_args(args)


def _main(argv: list[str]) -> int:
    """``argv`` run through its executable's entry point, as its console script runs it."""
    from relay_cli.cli import main as relay_main  # noqa: PLC0415
    from voice_agent.cli import main as agent_main  # noqa: PLC0415

    command, args = argv[0], argv[1:]
    if command == "relay":
        return relay_main(args)
    assert command == "voice-agent", command
    return agent_main(args)


@pytest.fixture
def no_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This process as :func:`_env` gives the processes (no AWS credentials or settings, no instance metadata), in
    an empty directory (returned)."""
    for name in [k for k in os.environ if k.startswith(("AWS_", "VOICE_AGENT_", "KOKORO_"))]:
        monkeypatch.delenv(name)
    for name, value in _env().items():
        if name.startswith("AWS_"):
            monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _answer(
    run: Callable[[], int | None], capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``run`` in this process: its return value or SystemExit's code (-1: it
    returned None, the command line got past the parser), stderr preceded by what it logged at WARNING and above
    (the level the executables show on stderr)."""
    capsys.readouterr()
    caplog.clear()
    try:
        returned = run()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    else:
        code = -1 if returned is None else returned
    out, err = capsys.readouterr()
    shown = logging.Formatter("%(levelname)s %(name)s: %(message)s")
    logged = "".join(f"{shown.format(r)}\n" for r in caplog.records if r.levelno >= logging.WARNING)
    return code, out, logged + err


def test_every_option_refuses_a_bad_value_with_one_line_naming_it(
    no_settings: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    mistakes = [_answer(partial(_parse, argv), capsys, caplog) for argv, _, _ in PARSER_CASES]
    helps = [_answer(partial(_parse, [*argv, "--help"]), capsys, caplog) for argv in PARSER_HELP]
    wrong = _wrong_answers(PARSER_CASES, [(code, err) for code, _, err in mistakes], PARSER_HELP, helps)
    assert wrong == [], "\n".join(wrong)
    assert list(no_settings.iterdir()) == []


def test_every_mistake_its_command_checks_is_one_line_with_its_status(
    no_settings: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    mistakes = [_answer(partial(_main, argv), capsys, caplog) for argv, _, _ in MAIN_CASES]
    wrong = _wrong_answers(MAIN_CASES, [(code, err) for code, _, err in mistakes], [], [])
    assert wrong == [], "\n".join(wrong)
    assert list(no_settings.iterdir()) == []


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
