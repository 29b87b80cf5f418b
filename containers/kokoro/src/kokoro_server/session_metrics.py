"""Per-request latency of the bidirectional sessions, as CloudWatch metrics the endpoint really emits.

SageMaker publishes ``ModelLatency`` only for ``InvokeEndpoint`` calls; a bidirectional session is one long
stream, so nothing per request reaches CloudWatch on its own. With ``KOKORO_METRICS_ENDPOINT`` set (the CDK app sets
it to the endpoint's name), every finished session request writes one line in CloudWatch's embedded metric format
(EMF) to standard output; SageMaker ships the container's output to ``/aws/sagemaker/Endpoints/<endpoint>``, where
CloudWatch Logs turns the line into metrics without any API call or permission.

Guarantees: one JSON object per line, no text, voice or audio in it (only timings and sizes); nothing is written
when the setting is unset (local runs and tests stay quiet).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from typing import TextIO

from relay_core.tts.metrics import emf_record


@dataclass(slots=True)
class SessionMetrics:
    """Writes :func:`relay_core.tts.metrics.emf_record` lines for one endpoint to ``stream`` (stdout by default)."""

    endpoint: str
    stream: TextIO = field(default_factory=lambda: sys.stdout)

    def request_finished(self, *, first_audio_s: float | None, elapsed_s: float, audio_s: float) -> None:
        record = emf_record(
            self.endpoint,
            first_audio_s=first_audio_s,
            elapsed_s=elapsed_s,
            audio_s=audio_s,
            now_ms=int(time.time() * 1000),
        )
        self.stream.write(json.dumps(record, separators=(",", ":")) + "\n")
        self.stream.flush()
