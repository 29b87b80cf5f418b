"""Powertools Logger, Tracer and Metrics shared by the gateway functions (one instance of each per process).

Created at import without I/O: the Tracer is inactive outside Lambda, and metrics are flushed as EMF log
lines by ``@metrics.log_metrics`` on each handler. Never log tokens, prompts or audio: log ids, codes, counts.
Metrics (namespace POWERTOOLS_METRICS_NAMESPACE): ``ConnectionsAuthorized``, ``ConnectionsRefused``,
``Connections``, ``Disconnections``, ``ClientMessages``, ``Turns``, ``TurnsRejected``, ``CancelsRequested``,
``Resumes``, ``ClientErrors`` (dimension ``code``), ``MessagesPosted``, ``PostFailures``, ``TurnsAbandoned``,
``TimeToFirstAudio`` (ms, relay start to first audio message posted), ``CancelLatency`` (ms, the relay's
cancel request to the turn's terminal message).

Log keys are per invocation, never shared: :func:`log_invocation` (instead of Powertools'
``inject_lambda_context``, whose keys live on the one module-level Logger) clears and sets the invocation's keys
in a context variable of the running thread, and the handlers add theirs with :func:`append_keys`. In Lambda
one environment runs one invocation at a time, so this changes nothing there; the local stack runs many
invocations of the same functions at once in one process (threads), where shared keys would leak from one
invocation's log lines into another's.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit, single_metric

from relay_functions.gateway.settings import DEFAULT_METRICS_NAMESPACE, DEFAULT_SERVICE_NAME

SERVICE = os.environ.get("POWERTOOLS_SERVICE_NAME") or DEFAULT_SERVICE_NAME

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or DEFAULT_METRICS_NAMESPACE
metrics = Metrics(namespace=NAMESPACE)

_cold_start = True
_cold_start_lock = threading.Lock()


def _take_cold_start() -> bool:
    global _cold_start
    with _cold_start_lock:
        cold, _cold_start = _cold_start, False
    return cold


def append_keys(**keys: object) -> None:
    """Add keys to this invocation's log lines only (a context variable of the running thread)."""
    logger.thread_safe_append_keys(**keys)


def log_invocation[R](handler: Callable[[Any, Any], R]) -> Callable[[Any, Any], R]:
    """Per-invocation log keys (the Lambda context's, ``cold_start``), none left from an earlier invocation on
    the same thread, none seen by an invocation running at the same time on another thread."""

    @functools.wraps(handler)
    def invoke(event: Any, context: Any) -> R:
        logger.thread_safe_clear_keys()
        append_keys(
            cold_start=_take_cold_start(),
            function_name=getattr(context, "function_name", ""),
            function_memory_size=getattr(context, "memory_limit_in_mb", 0),
            function_arn=getattr(context, "invoked_function_arn", ""),
            function_request_id=getattr(context, "aws_request_id", ""),
        )
        try:
            return handler(event, context)
        finally:
            logger.thread_safe_clear_keys()

    return invoke


def count(name: str, value: float = 1) -> None:
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)


def milliseconds(name: str, seconds: float) -> None:
    metrics.add_metric(name=name, unit=MetricUnit.Milliseconds, value=round(seconds * 1000, 1))


def client_error(code: str) -> None:
    """One ``ClientErrors`` data point with the error code as its dimension (its own EMF blob)."""
    with single_metric(name="ClientErrors", unit=MetricUnit.Count, value=1, namespace=NAMESPACE) as metric:
        metric.add_dimension(name="code", value=code)


__all__ = ["append_keys", "client_error", "count", "log_invocation", "logger", "metrics", "milliseconds", "tracer"]
