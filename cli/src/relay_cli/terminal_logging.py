"""Log lines as a terminal user wants them from ``relay``: one line each, never a traceback.

The local stack runs the agent, the functions and the servers in this process, and their loggers report a failure
with its stack (right for a server's log, noise in a terminal, where the command also prints one line saying what
to do). Here an exception attached to a record becomes ``: <Type>: <first line of its message>`` on the same line.
``RELAY_DEBUG=1`` keeps the full tracebacks, for debugging the stack itself.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

FORMAT = "%(levelname)s %(name)s: %(message)s"
DEBUG_ENV = "RELAY_DEBUG"


class OneLineFormatter(logging.Formatter):
    """A formatter that writes every record on one line, its exception (if any) summarised at the end."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(logging.makeLogRecord({**record.__dict__, "exc_info": None, "exc_text": None}))
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            detail = str(exc).splitlines()[0] if str(exc) else ""
            line += f": {type(exc).__name__}{': ' + detail if detail else ''}"
        return line.replace("\n", " ")


def configure(environ: Mapping[str, str] | None = None) -> None:
    """Warnings and errors to stderr, one line each (full tracebacks with ``RELAY_DEBUG=1``)."""
    env = os.environ if environ is None else environ
    handler = logging.StreamHandler()
    debug = env.get(DEBUG_ENV, "").strip().lower() in ("1", "true", "yes", "on")
    handler.setFormatter(logging.Formatter(FORMAT) if debug else OneLineFormatter(FORMAT))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])


__all__ = ["DEBUG_ENV", "OneLineFormatter", "configure"]
