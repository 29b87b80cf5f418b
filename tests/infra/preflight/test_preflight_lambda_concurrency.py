"""Lambda concurrency: the relay's reservation must leave Lambda's 100 unreserved executions."""

from __future__ import annotations

import pytest
from tests.infra.preflight.stubs import REGION, Stubbed

from relay_infra.preflight.lambda_concurrency import check_lambda_concurrency
from relay_infra.preflight.result import Status


@pytest.mark.parametrize(
    ("quota", "unreserved", "expected"),
    [
        (1000, 1000, Status.PASS),
        (1000, 150, Status.WARN),  # others (or this deployment, on a redeploy) reserved the rest
        (10, 10, Status.FAIL),  # a new account's quota cannot hold 96 and keep 100
        (196, 196, Status.PASS),
        (195, 195, Status.FAIL),
    ],
)
def test_the_reservation_must_leave_the_minimum_unreserved(
    stubbed: Stubbed, quota: int, unreserved: int, expected: Status
) -> None:
    client, stub = stubbed("lambda")
    limits = {"ConcurrentExecutions": quota, "UnreservedConcurrentExecutions": unreserved}
    stub.add_response("get_account_settings", {"AccountLimit": limits})
    result = check_lambda_concurrency(client, reserved=96, region=REGION)
    assert result.status is expected
    assert f"quota {quota}" in result.found
    if expected is not Status.PASS:
        assert "relay:relayReservedConcurrency" in result.fix and "L-B99A9384" in result.fix


def test_a_denied_read_names_the_permission(stubbed: Stubbed) -> None:
    client, stub = stubbed("lambda")
    stub.add_client_error("get_account_settings", "AccessDeniedException", "not authorized")
    result = check_lambda_concurrency(client, reserved=96, region=REGION)
    assert result.status is Status.FAIL and "lambda:GetAccountSettings" in result.fix
