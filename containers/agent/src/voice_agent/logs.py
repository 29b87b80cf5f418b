"""The agent's logging: one handler, one line per record, in JSON (deployed) or plain text (local).

``BedrockAgentCoreApp`` gives its own logger a JSON handler when it has none, and that logger also propagates to
the root logger: with a root handler configured too, every line of it would be printed twice. So the app's logger
gets a ``NullHandler`` (the app then adds none of its own) and every record goes through the one root handler.
"""

from __future__ import annotations

import logging
import sys
from enum import StrEnum

from bedrock_agentcore.runtime.app import RequestContextFormatter

AGENTCORE_APP_LOGGER = "bedrock_agentcore.app"
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class LogFormat(StrEnum):
    JSON = "json"
    """One JSON object per line, with AgentCore's request and session ids (what CloudWatch wants)."""
    TEXT = "text"


def configure_logging(level: str, fmt: LogFormat) -> None:
    """Route every log record, the AgentCore app's included, through one stderr handler in ``fmt``."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(RequestContextFormatter() if fmt is LogFormat.JSON else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    app_logger = logging.getLogger(AGENTCORE_APP_LOGGER)
    for old in list(app_logger.handlers):
        app_logger.removeHandler(old)
    app_logger.addHandler(logging.NullHandler())


__all__ = ["AGENTCORE_APP_LOGGER", "LogFormat", "configure_logging"]
