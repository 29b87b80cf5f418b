"""The command lines' usage errors: one line that names the option, exit status 2.

Every console command of the project (``relay``, ``kokoro-server``, ``voice-agent``) builds its parser from
:class:`UsageParser`, so a mistake on the command line reads the same everywhere: one line on stderr,
``{prog}: {what is wrong} (see '{prog} --help')``, and exit status 2, instead of argparse's usage block followed
by the error. ``--help`` is unchanged.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

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


__all__ = ["USAGE_EXIT", "UsageParser", "usage_error"]
