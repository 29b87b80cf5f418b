"""``voice-agent``: local defaults that work together, flags and VOICE_AGENT_* one to one, --version, logging once."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from relay_core.agent import defaults as agent_defaults
from voice_agent.cli import SERVER_SETTINGS, build_parser, options_from
from voice_agent.config import SETTINGS, AgentConfig

SAMPLES = {
    "transport": "ws", "tts_url": "ws://h:1/invocations-bidirectional-stream", "sagemaker_endpoint": "ep",
    "aws_region": "eu-west-1", "model": "bedrock", "model_id": "m", "model_base_url": "http://b", "model_api_key": "k",
    "speak_tokens_per_s": "12.5", "system_prompt": "be brief", "voice": "jf_alpha", "first_fragment_words": "off",
    "max_sentence_chars": "200", "audio_chunk_bytes": "4096", "tts_connect_timeout_s": "2", "cancel_grace_s": "0.25",
    "tts_capacity_wait_s": "7.5",
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
