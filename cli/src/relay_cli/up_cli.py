"""``relay up``: run the whole local relay (TTS container, agent, moto, the local API Gateway with the real
functions, the web client) until Ctrl-C, printing each part as it starts, then the web client's URL, the gateway
URL and a dev token. Ctrl-C stops every process it started."""

from __future__ import annotations

import argparse
import sys
import threading
import warnings

from relay_cli.agent_options import add_agent_options, agent_config_from, model_notice
from relay_cli.chat_cli import DEFAULT_USER
from relay_cli.cli_args import port_number
from relay_core.cli_usage import non_empty
from voice_agent.errors import ConfigError

NAME = "up"
DEFAULT_PORTS = {"web": 8090, "gateway": 8091, "aws": 8092}
"""Clear of the other local defaults (kokoro-server 8081, voice-agent 8082, both images 8080), so a standalone
container or agent can run beside ``relay up`` (``--tts-url`` / ``--agent-url``) with no flags."""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``relay up`` and its options."""
    parser = commands.add_parser("up", help="run the whole local relay (gateway, functions, agent, TTS, web)")
    ports = parser.add_argument_group("ports (0 = any free port)")
    ports.add_argument("--web-port", type=port_number, default=DEFAULT_PORTS["web"], help="web client (%(default)s)")
    ports.add_argument(
        "--gateway-port", type=port_number, default=DEFAULT_PORTS["gateway"], help="WebSocket API (%(default)s)"
    )
    ports.add_argument(
        "--aws-port", type=port_number, default=DEFAULT_PORTS["aws"], help="@connections/Lambda/AgentCore (%(default)s)"
    )
    ports.add_argument(
        "--dynamodb-port", type=port_number, default=0, help="moto: DynamoDB and S3 (default: a free port)"
    )
    parser.add_argument("--stage", type=non_empty, default="local", help="the API stage (the gateway URL's path)")
    parser.add_argument("--user", type=non_empty, default=DEFAULT_USER, help="user id of the printed dev token")
    add_agent_options(parser)
    parser.set_defaults(run=up)


def up(args: argparse.Namespace, *, stop: threading.Event | None = None) -> int:
    """Run until Ctrl-C (or until ``stop`` is set: tests), then stop everything and return 0; a Ctrl-C while the
    stack starts stops what had started, and also returns 0. Later Ctrl-Cs while it stops are ignored when the
    caller runs this inside :func:`relay_cli.interrupts.first_interrupt_only` (``relay``'s ``main`` does)."""
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    try:
        config = agent_config_from(args)
    except ConfigError as exc:
        print(f"relay up: {exc.message}", file=sys.stderr)
        return 2
    if (notice := model_notice(config)) is not None:
        print(notice, file=sys.stderr)

    from relay_local.relay_stack import RelayStack  # noqa: PLC0415 - the servers' imports only once they are needed
    from relay_local.servers import ServerStartError  # noqa: PLC0415

    def progress(line: str) -> None:
        print(line, flush=True)

    stack = RelayStack(
        tts_url=args.tts_url,
        agent_url=args.agent_url,
        agent_config=config,
        stage=args.stage,
        web_port=args.web_port,
        gateway_port=args.gateway_port,
        aws_port=args.aws_port,
        dynamodb_port=args.dynamodb_port,
        progress=progress,
        tts_transport=args.tts_transport,
    )
    try:
        try:
            stack.start()
        except OSError as exc:
            print(
                f"relay up: a port is taken ({exc.strerror}): choose others with --web-port, --gateway-port, "
                "--aws-port, --dynamodb-port (0 = any free port)",
                file=sys.stderr,
            )
            return 1
        except ServerStartError as exc:
            print(f"relay up: {exc}", file=sys.stderr)
            return 1
        print(f"\nweb client:  {stack.web_url}", flush=True)
        print(f"gateway:     {stack.gateway_url}")
        print(f"dev token ({args.user}, 1 h): {stack.dev_token(args.user)}")
        print(f'try:         relay chat --gateway-url {stack.gateway_url} --token <the token> "Hello!"')
        print("Ctrl-C stops everything.", flush=True)
        (stop or threading.Event()).wait()
    except KeyboardInterrupt:
        print("\nstopping ...", flush=True)
    finally:
        stack.stop()
    print("stopped.", flush=True)
    return 0


__all__ = ["DEFAULT_PORTS", "add_parser", "up"]
