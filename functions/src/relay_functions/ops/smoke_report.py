"""Lambda task ``relay_functions.ops.smoke_report.handler``: the smoke test's report and metrics.

Input ``{"outcome": "passed", "results": {...}}`` or ``{"outcome": "failed", "failure": {"step", "error",
"cause"}, "results": {...}}`` (``results``: what the checks that ran returned). Prints one EMF record (namespace
``POWERTOOLS_METRICS_NAMESPACE``, default KokoroRelay; dimension ``Workflow=SmokeTest``): ``SmokeTestPassed``
(1/0) and every measured figure (time to first audio of each check, audio seconds). Returns the report:
``{"passed", "figures", "checks", "failed_step"?, "error"?, "cause"?}``; the failure's ``cause`` names the step and
what was observed.
"""

from __future__ import annotations

import json
import os
from typing import Any, Final

from relay_functions.ops.emf import DEFAULT_NAMESPACE, emf_document
from relay_functions.ops.errors import InvalidTaskInputError

MILLISECONDS: Final = "Milliseconds"
SECONDS: Final = "Seconds"


def figures_of(results: dict[str, Any]) -> dict[str, tuple[float, str]]:
    """The metrics in the checks' results (missing checks simply contribute nothing)."""
    figures: dict[str, tuple[float, str]] = {}
    kokoro = results.get("kokoro") or {}
    for i, request in enumerate(kokoro.get("requests", []), start=1):
        figures[f"KokoroSessionRequest{i}FirstAudio"] = (float(request["first_audio_ms"]), MILLISECONDS)
    if "http_first_audio_ms" in kokoro:
        figures["KokoroInvocationsFirstAudio"] = (float(kokoro["http_first_audio_ms"]), MILLISECONDS)
    agent = results.get("agent") or {}
    if "first_audio_ms" in agent:
        figures["AgentFirstAudio"] = (float(agent["first_audio_ms"]), MILLISECONDS)
        figures["AgentAudio"] = (float(agent["audio_s"]), SECONDS)
    gateway = results.get("gateway") or {}
    if "first_audio_ms" in gateway:
        figures["GatewayFirstAudio"] = (float(gateway["first_audio_ms"]), MILLISECONDS)
    return figures


def _cause_text(cause: Any) -> str:
    """A Lambda failure's cause is the runtime's JSON (``errorType``, ``errorMessage``): keep the message."""
    if isinstance(cause, str):
        try:
            parsed = json.loads(cause)
        except ValueError:
            return cause
        if isinstance(parsed, dict) and "errorMessage" in parsed:
            return f"{parsed.get('errorType', 'Error')}: {parsed['errorMessage']}"
    return str(cause)


def build_report(event: dict[str, Any]) -> dict[str, Any]:
    outcome = event.get("outcome")
    results = event.get("results") or {}
    if outcome not in ("passed", "failed") or not isinstance(results, dict):
        raise InvalidTaskInputError("'outcome' must be 'passed' or 'failed' and 'results' an object")
    figures = figures_of(results)
    report: dict[str, Any] = {
        "passed": outcome == "passed",
        "figures": {name: value for name, (value, _) in figures.items()},
        "checks": results,
    }
    if outcome == "failed":
        failure = event.get("failure") or {}
        step = str(failure.get("step", "unknown step"))
        report.update(
            failed_step=step,
            error=f"SmokeTest.{step}Failed",
            cause=f"{step}: {_cause_text(failure.get('cause'))}",
        )
    return report


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    report = build_report(event)
    metrics = {"SmokeTestPassed": (1.0 if report["passed"] else 0.0, "Count")}
    metrics.update(figures_of(report["checks"]))
    namespace = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", DEFAULT_NAMESPACE)
    print(json.dumps(emf_document(metrics, dimensions={"Workflow": "SmokeTest"}, namespace=namespace)))
    return report


__all__ = ["build_report", "figures_of", "handler"]
