"""``relay deploy``: commands about deploying to AWS. ``relay deploy preflight`` checks a target account read-only
before ``make deploy`` (its logic lives in ``relay_infra.preflight``; docs/deploy.md)."""

from __future__ import annotations

import argparse

from relay_infra.preflight import cli as preflight_cli


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``relay deploy preflight`` and its options."""
    parser = commands.add_parser("deploy", help="deploying to AWS: preflight checks of the target account")
    actions = parser.add_subparsers(dest="deploy_command", required=True)
    preflight = actions.add_parser(
        "preflight",
        help="read-only checks of the target account before make deploy (one line each; exit 1 on a failure)",
        description=preflight_cli.__doc__,
    )
    preflight_cli.add_arguments(preflight)
    preflight.set_defaults(run=preflight_cli.run)
