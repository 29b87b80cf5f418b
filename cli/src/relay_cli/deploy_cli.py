"""``relay deploy``: commands about deploying to AWS. ``relay deploy preflight`` checks a target account read-only
before ``make deploy`` (its logic lives in ``relay_infra.preflight``; docs/deploy.md).

``relay_infra`` (the CDK app's package) is imported only when ``relay deploy preflight`` is the command being
parsed: its options and description are added to the subcommand's parser at that moment, so ``relay --help`` and
every other command load nothing of the CDK app.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

ParserBuilder = Callable[[argparse.ArgumentParser], None]

if TYPE_CHECKING:
    _SubcommandsAction = argparse._SubParsersAction[argparse.ArgumentParser]
else:  # not subscriptable at run time
    _SubcommandsAction = argparse._SubParsersAction


class DeferredSubcommands(_SubcommandsAction):
    """Subcommands whose parsers are completed only when chosen: ``defer(name, build)`` runs ``build`` on the
    subcommand's parser just before argparse parses the subcommand's arguments (``--help`` included), once."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deferred: dict[str, ParserBuilder] = {}

    def defer(self, name: str, build: ParserBuilder) -> None:
        self._deferred[name] = build

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        if isinstance(values, Sequence) and values and isinstance(values[0], str):
            build = self._deferred.pop(values[0], None)
            if build is not None:
                build(self.choices[values[0]])
        super().__call__(parser, namespace, values, option_string)


def _complete_preflight(parser: argparse.ArgumentParser) -> None:
    """``relay deploy preflight``'s description, options and runner, from ``relay_infra.preflight.cli``."""
    from relay_infra.preflight import cli as preflight_cli  # noqa: PLC0415 - the CDK app's package only when chosen

    parser.description = preflight_cli.__doc__
    preflight_cli.add_arguments(parser)
    parser.set_defaults(run=preflight_cli.run)


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``relay deploy preflight`` (its options are added when it is the command parsed)."""
    parser = commands.add_parser("deploy", help="deploying to AWS: preflight checks of the target account")
    actions = parser.add_subparsers(dest="deploy_command", required=True, action=DeferredSubcommands)
    assert isinstance(actions, DeferredSubcommands)
    actions.add_parser(
        "preflight",
        help="read-only checks of the target account before make deploy (one line each; exit 1 on a failure)",
    )
    actions.defer("preflight", _complete_preflight)
