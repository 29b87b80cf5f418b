"""The ``stubbed`` fixture of the preflight tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.stub import Stubber
from tests.infra.preflight.stubs import Stubbed, aws_client


@pytest.fixture
def stubbed() -> Iterator[Stubbed]:
    """``stubbed("ssm")`` → ``(client, stubber)``, activated; every queued response must be consumed."""
    stubbers: list[Stubber] = []

    def make(service: str) -> tuple[Any, Stubber]:
        client = aws_client(service)
        stubber = Stubber(client)
        stubber.activate()
        stubbers.append(stubber)
        return client, stubber

    yield make
    for stubber in stubbers:
        stubber.assert_no_pending_responses()
        stubber.deactivate()
