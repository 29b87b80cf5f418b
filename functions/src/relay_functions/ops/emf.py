"""CloudWatch Embedded Metric Format: one JSON log line that CloudWatch turns into metrics.

A Lambda prints :func:`emf_document` to stdout; CloudWatch Logs extracts the metrics (no API call, no SDK).
Spec: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Final

DEFAULT_NAMESPACE: Final = "KokoroRelay"


def emf_document(
    metrics: Mapping[str, tuple[float, str]],
    *,
    dimensions: Mapping[str, str],
    namespace: str = DEFAULT_NAMESPACE,
    timestamp_ms: int | None = None,
) -> dict[str, Any]:
    """One EMF record: ``metrics`` is name -> (value, unit: ``Milliseconds``, ``Seconds``, ``Count``...)."""
    document: dict[str, Any] = {
        "_aws": {
            "Timestamp": timestamp_ms if timestamp_ms is not None else int(time.time() * 1000),
            "CloudWatchMetrics": [
                {
                    "Namespace": namespace,
                    "Dimensions": [sorted(dimensions)],
                    "Metrics": [{"Name": name, "Unit": unit} for name, (_, unit) in sorted(metrics.items())],
                }
            ],
        }
    }
    document.update(dimensions)
    document.update({name: value for name, (value, _) in metrics.items()})
    return document


__all__ = ["DEFAULT_NAMESPACE", "emf_document"]
