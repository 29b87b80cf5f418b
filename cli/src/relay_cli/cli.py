"""``relay``: the Kokoro Relay command line.

Each subcommand lives in a module of its own (``speak_cli``, ...) that registers its parser with
``add_parser(commands)`` and sets ``run`` (a function of the parsed arguments returning the exit code); this
module only assembles them, so parts of the CLI can grow without touching each other.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from types import ModuleType

from relay_cli import chat_cli, deploy_cli, ops_cli, speak_cli, terminal_logging, up_cli
from relay_cli.interrupts import first_interrupt_only
from relay_core.cli_usage import UsageParser

SUBCOMMANDS: tuple[ModuleType, ...] = (speak_cli, up_cli, chat_cli, ops_cli, deploy_cli)
"""The modules that provide ``relay`` subcommands, in the order ``relay --help`` lists them."""


def build_parser() -> argparse.ArgumentParser:
    parser = UsageParser(prog="relay", description="Kokoro Relay: give an AI agent a voice.")
    commands = parser.add_subparsers(dest="command", required=True)
    for module in SUBCOMMANDS:
        module.add_parser(commands)
    return parser


AGENTCORE_APP_LOGGER = "bedrock_agentcore.app"


def quiet_agentcore_access_log() -> None:
    """The CLI prints the turn itself: keep the AgentCore app's per-request INFO lines (which it would otherwise
    print through a handler of its own) out of the terminal; its warnings and errors still show."""
    agentcore = logging.getLogger(AGENTCORE_APP_LOGGER)
    agentcore.addHandler(logging.NullHandler())  # present before the app starts, so it adds no handler of its own
    agentcore.setLevel(logging.WARNING)


INTERRUPTED = 130
"""Exit status of a command stopped by Ctrl-C before it finished (128 + SIGINT, as shells report it); ``relay up``,
whose normal end is Ctrl-C, exits 0 instead."""


def main(argv: list[str] | None = None) -> int:
    """Run one ``relay`` command line; returns its exit status: 0 done, 1 it failed (one line on stderr says what
    to do), 2 a usage error (one line naming the option; nothing started, nothing written), 130 interrupted.

    Ctrl-C: the first SIGINT stops the command, later ones are ignored until everything it started is stopped."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error already reported on one line
        return exc.code if isinstance(exc.code, int) else 2
    terminal_logging.configure()
    quiet_agentcore_access_log()
    run: Callable[[argparse.Namespace], int] = args.run
    with first_interrupt_only():
        try:
            return run(args)
        except KeyboardInterrupt:
            print(f"\nrelay {args.command}: interrupted; everything it started is stopped", file=sys.stderr)
            return INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
