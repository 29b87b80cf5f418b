"""One line per check, and the verdict: which statuses block a deploy."""

from __future__ import annotations

from relay_infra.preflight.result import CheckResult, Status
from relay_infra.preflight.runner import report


def test_a_pass_prints_no_fix_and_a_failure_prints_its_fix() -> None:
    assert CheckResult("docker", Status.PASS, "daemon 27.1", "never shown").line(8) == "✓ docker   daemon 27.1"
    assert CheckResult("quota", Status.FAIL, "'x' = 0", "request 4").line(8) == "✗ quota    'x' = 0; fix: request 4"


def test_a_line_stays_one_line_whatever_aws_returned() -> None:
    line = CheckResult("bedrock", Status.FAIL, "AccessDenied:\n  not\tallowed", "ask\nyour admin").line()
    assert "\n" not in line
    assert line.endswith("AccessDenied: not allowed; fix: ask your admin")


def test_warnings_pass_failures_and_skips_do_not() -> None:
    passing = [CheckResult("a", Status.PASS, "ok"), CheckResult("b", Status.WARN, "meh", "do x")]
    lines, status = report(passing)
    assert status == 0
    assert lines[-1] == "preflight passed: 2 checks (1 warning). Ready for make deploy."
    lines, status = report([*passing, CheckResult("c", Status.SKIP, "n/a"), CheckResult("d", Status.FAIL, "bad")])
    assert status == 1
    assert lines[-1].startswith("preflight failed: c, d.")
    assert len(lines) == 5
