"""The command lines' usage errors: one line that names the option, exit status 2; and the argparse types
more than one command line uses.

Every console command of the project (``relay``, ``kokoro-server``, ``voice-agent``) builds its parser from
:class:`UsageParser`, so a mistake on the command line reads the same everywhere: one line on stderr,
``{prog}: {what is wrong} (see '{prog} --help')``, and exit status 2, instead of argparse's usage block followed
by the error. ``--help`` is unchanged.

An argparse ``type=`` that two commands need (:func:`non_empty`, :func:`given_path`) is written here once; one
that only a command's own rules give stays with that command (``relay_cli.cli_args``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

from relay_core.errors import InvalidFieldError
from relay_core.languages import parse_lang

USAGE_EXIT = 2
"""The exit status of a usage error (as argparse and the shells' own tools use)."""


class UsageParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line; its subparsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        """Print ``{prog}: {message} (see '{prog} --help')`` on stderr and exit with :data:`USAGE_EXIT`."""
        usage_error(self.prog, message)


def usage_error(prog: str, message: str) -> NoReturn:
    """Report a usage error the way :class:`UsageParser` does (checks made after parsing use it too)."""
    print(f"{prog}: {message} (see '{prog} --help')", file=sys.stderr)
    sys.exit(USAGE_EXIT)


def non_empty(text: str) -> str:
    """An argparse type: any text but an empty (or blank) one."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def lang_code(text: str) -> str:
    """An argparse type: one of Kokoro's languages in any spelling ``relay_core.languages.parse_lang`` takes,
    returned as its code (``a`` → ``en-us``)."""
    try:
        return parse_lang(text).code
    except InvalidFieldError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def given_path(text: str) -> Path:
    """An argparse type: a path that is not empty (an empty one would mean the current directory). Whether there is
    anything usable there is the command's to find out (``kokoro-server`` stops with status 1 and the reason)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the path is empty: give a file or directory")
    return Path(text)


__all__ = ["USAGE_EXIT", "UsageParser", "given_path", "lang_code", "non_empty", "usage_error"]
