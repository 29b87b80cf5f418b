"""``voice-agent``: local defaults that work together, flags and VOICE_AGENT_* one to one, --version, logging once."""

from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from relay_core.agent import defaults as agent_defaults
from voice_agent.cli import SERVER_SETTINGS, build_parser, options_from
from voice_agent.config import SETTINGS, AgentConfig, check_model_reachable
from voice_agent.errors import ConfigError

SAMPLES = {
    "transport": "ws", "tts_url": "ws://h:1/invocations-bidirectional-stream", "sagemaker_endpoint": "ep",
    "aws_region": "eu-west-1", "model": "bedrock", "model_id": "m", "model_base_url": "http://b", "model_api_key": "k",
    "speak_tokens_per_s": "12.5", "system_prompt": "be brief", "voice": "jf_alpha", "lang": "Z",
    "first_fragment_words": "off", "max_sentence_chars": "200", "audio_chunk_bytes": "4096",
    "tts_connect_timeout_s": "2", "cancel_grace_s": "0.25",
    "tts_capacity_wait_s": "7.5",
    "history_bucket": "conversations-bucket", "history_prefix": "talk/", "history_window_messages": "12",
    "host": "0.0.0.0", "port": "9000", "log_level": "DEBUG", "log_format": "json",
}  # fmt: skip


def test_local_defaults_meet_without_flags() -> None:
    server, config = options_from(build_parser().parse_args([]), {})
    assert server.port == agent_defaults.LOCAL_AGENT_PORT == 8082
    assert config.tts_url == f"ws://127.0.0.1:{agent_defaults.LOCAL_TTS_PORT}/invocations-bidirectional-stream"
    assert agent_defaults.LOCAL_TTS_PORT == 8081 and agent_defaults.IMAGE_PORT == 8080


def test_every_field_has_one_flag_and_one_variable_that_mean_the_same() -> None:
    fields = {f.name for f in dataclasses.fields(AgentConfig)}
    assert {s.field for s in SETTINGS} == fields
    for setting in (*SETTINGS, *SERVER_SETTINGS):
        assert setting.env_name == "VOICE_AGENT_" + setting.field.upper()
        by_flag = options_from(build_parser().parse_args([setting.flag, SAMPLES[setting.field]]), {})
        by_env = options_from(build_parser().parse_args([]), {setting.env_name: SAMPLES[setting.field]})
        assert by_flag == by_env, setting.field


def test_a_flag_wins_over_its_variable() -> None:
    _, config = options_from(build_parser().parse_args(["--voice", "a"]), {"VOICE_AGENT_VOICE": "b"})
    assert config.voice == "a"


def test_lang_is_one_of_kokoros_languages_in_any_spelling() -> None:
    _, config = options_from(build_parser().parse_args([]), {"VOICE_AGENT_LANG": "ES"})
    assert config.lang == "es"
    with pytest.raises(ConfigError, match=r"VOICE_AGENT_LANG has an invalid value 'de'.*en-us, en-gb"):
        options_from(build_parser().parse_args([]), {"VOICE_AGENT_LANG": "de"})


def test_help_is_plain_text_and_names_every_variable(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    text = capsys.readouterr().out
    assert "``" not in text
    assert all(s.env_name in text for s in (*SETTINGS, *SERVER_SETTINGS))
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--version"])
    assert capsys.readouterr().out.startswith("voice-agent 0.1.0")


def test_every_log_line_is_printed_once() -> None:
    script = (
        "import logging\n"
        "from voice_agent.logs import LogFormat, configure_logging\n"
        "configure_logging('INFO', LogFormat.JSON)\n"
        "from voice_agent.app import create_app\n"
        "create_app()\n"
        "logging.getLogger('bedrock_agentcore.app').info('one line from the app logger')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    lines = done.stderr.splitlines()
    assert sum("one line from the app logger" in line for line in lines) == 1
    assert sum("voice agent ready" in line for line in lines) == 1
    assert all(line.startswith("{") for line in lines if line)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _env_without_aws(**extra: str) -> dict[str, str]:
    """The process's environment with no AWS or agent setting and no way to find credentials, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "VOICE_AGENT_"))}
    env.update(
        AWS_EC2_METADATA_DISABLED="true", AWS_CONFIG_FILE="/nonexistent", AWS_SHARED_CREDENTIALS_FILE="/nonexistent"
    )
    return {**env, **extra}


def test_the_speak_model_without_a_bedrock_endpoint_is_refused_at_start_with_what_to_run(tmp_path: Path) -> None:
    """``uv run voice-agent`` on its own: one line naming the stand-in to start and the variable to set, exit 2,
    before anything listens (it used to say "ready" and fail every turn with NoCredentialsError)."""
    exe = Path(sys.executable).with_name("voice-agent")
    port = _free_port()
    done = subprocess.run(
        [str(exe), "--port", str(port)],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120, env=_env_without_aws(), cwd=tmp_path,
        check=False,
    )  # fmt: skip
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(lines) == 1, done.stderr[-2000:]
    assert lines[0].startswith("voice-agent: the speak model (local.echo)")
    assert "python -m relay_local.bedrock" in lines[0]
    assert f"AWS_ENDPOINT_URL_BEDROCK_RUNTIME={agent_defaults.LOCAL_BEDROCK_URL}" in lines[0]
    assert "ready" not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("argv", "env"),
    [
        (["--model", "bedrock"], {}),
        (["--model", "openai", "--model-id", "m"], {}),
        ([], {"AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "http://127.0.0.1:9"}),
        ([], {"AWS_ENDPOINT_URL": "http://127.0.0.1:9"}),
    ],
)
def test_a_model_the_agent_can_reach_is_not_refused(argv: list[str], env: dict[str, str]) -> None:
    _, config = options_from(build_parser().parse_args(argv), {})
    check_model_reachable(config, env)
    with pytest.raises(ConfigError, match=r"relay_local\.bedrock"):
        check_model_reachable(AgentConfig(), {"AWS_REGION": "us-east-1"})


def test_the_speak_model_reaches_the_stand_in_with_no_aws_credentials(bedrock_standin: Any) -> None:
    """What the agent says it uses, it reaches: the speak model's calls to the stand-in need no AWS account (a
    process with only the endpoint variable set, no credentials anywhere)."""
    script = (
        "import asyncio\n"
        "from voice_agent.config import AgentConfig\n"
        "from voice_agent.models.factory import make_model\n"
        "async def main() -> None:\n"
        "    model = make_model(AgentConfig(speak_tokens_per_s=1000))\n"
        "    messages = [{'role': 'user', 'content': [{'text': 'Hello there. One two.'}]}]\n"
        "    async for event in model.stream(messages):\n"
        "        delta = event.get('contentBlockDelta', {}).get('delta', {})\n"
        "        print(delta.get('text', ''), end='')\n"
        "asyncio.run(main())\n"
    )
    env = _env_without_aws(AWS_ENDPOINT_URL_BEDROCK_RUNTIME=bedrock_standin.endpoint_url)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == "Hello there. One two."
