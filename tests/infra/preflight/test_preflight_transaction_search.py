"""Transaction Search: on (CloudWatchLogs, ACTIVE) passes, turning on warns, off or unreadable fails with the fix."""

from __future__ import annotations

import pytest
from tests.infra.preflight.stubs import Stubbed

from relay_infra.preflight.result import Status
from relay_infra.preflight.transaction_search import FIX, check_transaction_search


@pytest.mark.parametrize(
    ("destination", "status", "expected"),
    [
        ("CloudWatchLogs", "ACTIVE", Status.PASS),
        ("CloudWatchLogs", "PENDING", Status.WARN),
        ("XRay", "ACTIVE", Status.FAIL),
        ("XRay", "PENDING", Status.FAIL),
    ],
)
def test_the_trace_segment_destination_decides(
    stubbed: Stubbed, destination: str, status: str, expected: Status
) -> None:
    xray, stub = stubbed("xray")
    stub.add_response("get_trace_segment_destination", {"Destination": destination, "Status": status})
    result = check_transaction_search(xray)
    assert result.status is expected
    assert destination in result.found
    if expected is Status.FAIL:
        assert result.fix == FIX
        assert "update-trace-segment-destination --destination CloudWatchLogs" in result.line()


def test_a_denied_read_names_the_permission(stubbed: Stubbed) -> None:
    xray, stub = stubbed("xray")
    stub.add_client_error("get_trace_segment_destination", "AccessDeniedException", "not authorized")
    result = check_transaction_search(xray)
    assert result.status is Status.FAIL
    assert "xray:GetTraceSegmentDestination" in result.fix
