"""post_to_connection: delivered through moto's @connections API; GoneException, throttling and permanent
errors (which moto never produces) through botocore's Stubber on the same boto3 client."""

from __future__ import annotations

import random
from types import ModuleType
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from relay_functions.gateway.posting import Backoff, ManagementApiPoster, PostFailedError


def management_client(gw: ModuleType) -> Any:
    return boto3.client("apigatewaymanagementapi", endpoint_url=gw.ENDPOINT, region_name=gw.REGION)


def test_messages_reach_the_connection_in_order(aws: None, gw: ModuleType) -> None:
    poster = ManagementApiPoster(management_client(gw))
    assert poster.post("conn-1", '{"type":"turn_accepted","turn_id":"t-1"}')
    assert poster.post("conn-1", '{"type":"text_delta","turn_id":"t-1","seq":0,"text":"héllo"}')
    assert [m["type"] for m in gw.posted("conn-1")] == ["turn_accepted", "text_delta"]
    assert gw.posted("conn-1")[1]["text"] == "héllo"


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def stubbed(gw: ModuleType, backoff: Backoff | None = None) -> tuple[ManagementApiPoster, Stubber, Sleeps]:
    client = management_client(gw)
    sleeps = Sleeps()
    return (
        ManagementApiPoster(client, backoff=backoff or Backoff(), sleep=sleeps, rng=random.Random(7)),
        Stubber(client),
        sleeps,
    )


def test_gone_is_an_answer_not_an_error(aws: None, gw: ModuleType) -> None:
    poster, stub, sleeps = stubbed(gw)
    stub.add_client_error("post_to_connection", service_error_code="GoneException", http_status_code=410)
    with stub:
        assert poster.post("conn-1", "{}") is False
    stub.assert_no_pending_responses()
    assert sleeps.delays == []


def test_throttling_is_retried_with_bounded_jittered_backoff(aws: None, gw: ModuleType) -> None:
    backoff = Backoff(attempts=4, base_s=0.1, cap_s=0.3)
    poster, stub, sleeps = stubbed(gw, backoff)
    stub.add_client_error("post_to_connection", service_error_code="LimitExceededException", http_status_code=429)
    stub.add_client_error("post_to_connection", service_error_code="ThrottlingException", http_status_code=400)
    stub.add_client_error("post_to_connection", service_error_code="InternalServerError", http_status_code=500)
    stub.add_response("post_to_connection", {}, {"ConnectionId": "conn-1", "Data": b"{}"})
    with stub:
        assert poster.post("conn-1", "{}") is True
    stub.assert_no_pending_responses()
    assert len(sleeps.delays) == 3 and poster.retries == 3
    assert all(0 <= d <= min(0.3, 0.1 * 2**n) for n, d in enumerate(sleeps.delays, start=1))


def test_throttling_gives_up_after_the_last_attempt(aws: None, gw: ModuleType) -> None:
    poster, stub, sleeps = stubbed(gw, Backoff(attempts=3, base_s=0.01, cap_s=0.02))
    for _ in range(3):
        stub.add_client_error("post_to_connection", service_error_code="LimitExceededException", http_status_code=429)
    with stub, pytest.raises(PostFailedError, match="after 3 attempts"):
        poster.post("conn-1", "{}")
    assert len(sleeps.delays) == 2


@pytest.mark.parametrize(("code", "status"), [("PayloadTooLargeException", 413), ("ForbiddenException", 403)])
def test_permanent_errors_are_not_retried(aws: None, gw: ModuleType, code: str, status: int) -> None:
    poster, stub, sleeps = stubbed(gw)
    stub.add_client_error("post_to_connection", service_error_code=code, http_status_code=status)
    with stub, pytest.raises(PostFailedError, match=code):
        poster.post("conn-1", "{}")
    assert sleeps.delays == []
