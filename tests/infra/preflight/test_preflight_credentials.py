"""The credentials check: who is calling, and in which region."""

from __future__ import annotations

from tests.infra.preflight.stubs import ACCOUNT, Stubbed

from relay_infra.preflight.credentials import check_credentials
from relay_infra.preflight.result import Status

IDENTITY = {"UserId": "AIDAEXAMPLE", "Account": ACCOUNT, "Arn": f"arn:aws:iam::{ACCOUNT}:user/deployer"}


def test_passes_with_an_identity_and_a_region(stubbed: Stubbed) -> None:
    sts, stub = stubbed("sts")
    stub.add_response("get_caller_identity", IDENTITY, {})
    result, account = check_credentials(sts, "eu-west-1")
    assert result.status is Status.PASS
    assert account == ACCOUNT
    assert result.found == f"account {ACCOUNT} as arn:aws:iam::{ACCOUNT}:user/deployer, region eu-west-1"


def test_fails_without_a_region_but_names_the_account(stubbed: Stubbed) -> None:
    sts, stub = stubbed("sts")
    stub.add_response("get_caller_identity", IDENTITY, {})
    result, account = check_credentials(sts, None)
    assert result.status is Status.FAIL
    assert account == ACCOUNT
    assert "no region" in result.found
    assert "AWS_REGION" in result.fix


def test_fails_on_rejected_credentials(stubbed: Stubbed) -> None:
    sts, stub = stubbed("sts")
    stub.add_client_error(
        "get_caller_identity", "ExpiredToken", "The security token included in the request is expired"
    )
    result, account = check_credentials(sts, "us-east-1")
    assert result.status is Status.FAIL
    assert account is None
    assert result.found == "ExpiredToken: The security token included in the request is expired"
    assert "aws sso login" in result.fix
