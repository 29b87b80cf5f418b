"""Per-request latency and the open and queued sessions, as CloudWatch metrics the endpoint really emits.

SageMaker publishes ``ModelLatency`` only for ``InvokeEndpoint`` calls; a bidirectional session is one long
stream, so nothing per request reaches CloudWatch on its own. With ``KOKORO_METRICS_ENDPOINT`` set (the CDK app sets
it to the endpoint's name), every finished session request writes one line in CloudWatch's embedded metric format
(EMF) to standard output; SageMaker ships the container's output to ``/aws/sagemaker/Endpoints/<endpoint>``, where
CloudWatch Logs turns the line into metrics without any API call or permission.

:func:`publish_sessions` samples the instance's admission (sessions holding a slot, sessions waiting for one) every
``SESSION_GAUGE_INTERVAL_S`` as one more such line: the queue's length is the signal to scale out on.

Guarantees: one JSON object per line, no text, voice or audio in it (only timings and sizes); nothing is written
when the setting is unset (local runs and tests stay quiet).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import dataclass, field
from typing import Any, TextIO

from kokoro_server.admission import Admission
from relay_core.tts.metrics import SESSION_GAUGE_INTERVAL_S, emf_record, sessions_emf_record


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
        self._write(record)

    def sessions(self, admission: Admission) -> None:
        """One sample of the sessions open and queued now."""
        stats = admission.stats()
        now_ms = int(time.time() * 1000)
        self._write(
            sessions_emf_record(self.endpoint, open_sessions=stats.active, queued_sessions=stats.queued, now_ms=now_ms)
        )

    def _write(self, record: dict[str, Any]) -> None:
        self.stream.write(json.dumps(record, separators=(",", ":")) + "\n")
        self.stream.flush()


async def publish_sessions(
    metrics: SessionMetrics, admission: Admission, *, interval_s: float = SESSION_GAUGE_INTERVAL_S
) -> None:
    """Sample the sessions every ``interval_s`` until cancelled (the app's lifespan runs it when metrics are on)."""
    while True:
        metrics.sessions(admission)
        await asyncio.sleep(interval_s)
