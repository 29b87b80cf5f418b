"""Powertools Logger, Tracer and Metrics shared by the gateway functions (one instance of each per process).

Created at import without I/O: the Tracer is inactive outside Lambda, and metrics are flushed as EMF log
lines by ``@metrics.log_metrics`` on each handler. Never log tokens, prompts or audio: log ids, codes, counts.
Metrics (namespace POWERTOOLS_METRICS_NAMESPACE): ``ConnectionsAuthorized``, ``ConnectionsRefused``,
``Connections``, ``Disconnections``, ``ClientMessages``, ``Turns``, ``TurnsRejected``, ``CancelsRequested``,
``Resumes``, ``ClientErrors`` (dimension ``code``), ``MessagesPosted``, ``PostFailures``, ``TurnsAbandoned``,
``TimeToFirstAudio`` (ms, relay start to first audio message posted), ``CancelLatency`` (ms, the relay's
cancel request to the turn's terminal message).
"""

from __future__ import annotations

import os

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit, single_metric

from relay_functions.gateway.settings import DEFAULT_METRICS_NAMESPACE, DEFAULT_SERVICE_NAME

SERVICE = os.environ.get("POWERTOOLS_SERVICE_NAME") or DEFAULT_SERVICE_NAME

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or DEFAULT_METRICS_NAMESPACE
metrics = Metrics(namespace=NAMESPACE)


def count(name: str, value: float = 1) -> None:
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)


def milliseconds(name: str, seconds: float) -> None:
    metrics.add_metric(name=name, unit=MetricUnit.Milliseconds, value=round(seconds * 1000, 1))


def client_error(code: str) -> None:
    """One ``ClientErrors`` data point with the error code as its dimension (its own EMF blob)."""
    with single_metric(name="ClientErrors", unit=MetricUnit.Count, value=1, namespace=NAMESPACE) as metric:
        metric.add_dimension(name="code", value=code)


__all__ = ["client_error", "count", "logger", "metrics", "milliseconds", "tracer"]
