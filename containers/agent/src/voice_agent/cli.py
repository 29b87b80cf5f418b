"""voice-agent: run the agent app (the same app AgentCore runs in its container on port 8080).

Every option is a flag and a VOICE_AGENT_* environment variable, one to one (--tts-url = VOICE_AGENT_TTS_URL);
a flag wins over its variable. With neither, the agent listens on 127.0.0.1:8082, talks to a local kokoro-server
on port 8081, and replies with the speak model: local.echo through the Bedrock API (no LLM), which needs the local
Bedrock stand-in (python -m relay_local.bedrock, and AWS_ENDPOINT_URL_BEDROCK_RUNTIME=http://127.0.0.1:8083; relay
up and relay speak start one): without that variable the speak model is refused at start (exit 2).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.metadata
import os
import sys
from collections.abc import Mapping
from types import FrameType
from typing import Any

from relay_core.agent import defaults as agent_defaults
from relay_core.cli_usage import UsageParser
from voice_agent.config import SETTINGS, AgentConfig, Setting, check_model_reachable
from voice_agent.errors import ConfigError
from voice_agent.logs import LogFormat, configure_logging


@dataclasses.dataclass(frozen=True)
class ServerOptions:
    """How the process serves the app (not part of the agent's behaviour)."""

    host: str = agent_defaults.LOCAL_HOST
    port: int = agent_defaults.LOCAL_AGENT_PORT
    log_level: str = "INFO"
    log_format: LogFormat = LogFormat.TEXT


SERVER_SETTINGS: tuple[Setting, ...] = (
    Setting("host", str, f"interface to listen on (default {ServerOptions.host}; the image uses 0.0.0.0)"),
    Setting("port", int, f"port (default {ServerOptions.port}; the image uses {agent_defaults.IMAGE_PORT})"),
    Setting("log_level", str, "DEBUG, INFO, WARNING or ERROR (default INFO)"),
    Setting("log_format", LogFormat, "text (default) or json (one object per line; the image uses json)"),
)


def build_parser() -> argparse.ArgumentParser:
    parser = UsageParser(prog="voice-agent", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {importlib.metadata.version('voice-agent')}")
    for setting in (*SERVER_SETTINGS, *SETTINGS):
        parser.add_argument(
            setting.flag, dest=setting.field, metavar=setting.field.upper(), help=f"{setting.help} [{setting.env_name}]"
        )
    return parser


def _values(settings: tuple[Setting, ...], args: argparse.Namespace, env: Mapping[str, str]) -> dict[str, object]:
    values: dict[str, object] = {}
    for setting in settings:
        flag_value = getattr(args, setting.field)
        if flag_value is not None:
            values[setting.field] = setting.parse_text(flag_value, source=setting.flag)
        elif env.get(setting.env_name):
            values[setting.field] = setting.parse_env(env)
    return values


def options_from(args: argparse.Namespace, env: Mapping[str, str]) -> tuple[ServerOptions, AgentConfig]:
    """The server options and the agent's configuration: flags first, then ``VOICE_AGENT_*``, then defaults."""
    server = ServerOptions(**_values(SERVER_SETTINGS, args, env))  # type: ignore[arg-type]
    base = AgentConfig.from_env(env)
    config = dataclasses.replace(base, **_values(SETTINGS, args, {}))  # type: ignore[arg-type]
    return server, config


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        server, config = options_from(args, os.environ)
        check_model_reachable(config, os.environ)
        configure_logging(server.log_level, server.log_format)
    except (ConfigError, ValueError) as exc:
        print(f"voice-agent: {getattr(exc, 'message', exc)}", file=sys.stderr)
        return 2
    from voice_agent.app import create_app  # noqa: PLC0415 - after logging is configured, so it logs once

    serve(create_app(config), host=server.host, port=server.port)
    return 0


def serve(app: Any, *, host: str, port: int) -> None:
    """Serve the AgentCore app under uvicorn (as ``BedrockAgentCoreApp.run`` does) until Ctrl-C or SIGTERM,
    however often they arrive: the first stops gracefully, repeats (a terminal signals the whole process group)
    are ignored instead of forcing an exit that cancels the shutdown, and no traceback follows."""
    import uvicorn  # noqa: PLC0415 - the server only when serving

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            if not self.should_exit:
                super().handle_exit(sig, frame)

    log_level = "info" if app.debug else "warning"
    server = Server(uvicorn.Config(app, host=host, port=port, access_log=app.debug, log_level=log_level))
    # uvicorn re-raises the signal it stopped on once everything has stopped: the stop is done, and clean
    with contextlib.suppress(KeyboardInterrupt):
        server.run()


if __name__ == "__main__":
    sys.exit(main())
