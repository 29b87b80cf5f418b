"""Credentials for the SageMaker HTTP/2 SDK come from boto3's chain (env vars, profiles, roles), refreshed by boto3."""

from __future__ import annotations

import sys
from pathlib import Path

import boto3
import pytest

from relay_transport.errors import TransportConfigError, TtsUnavailableError
from relay_transport.sagemaker import ENDPOINT_URL_ENV, SageMakerTransport
from relay_transport.sagemaker_credentials import BotoCredentialsResolver

pytestmark = pytest.mark.anyio

CREDENTIAL_PROCESS = """\
import datetime, json, pathlib, sys
expires = datetime.datetime.now(datetime.UTC) + datetime.timedelta(minutes=12)
counter = pathlib.Path(sys.argv[1])
n = int(counter.read_text()) + 1 if counter.exists() else 1
counter.write_text(str(n))
print(json.dumps({"Version": 1, "AccessKeyId": f"AKIDROTATED{n}", "SecretAccessKey": f"secret{n}",
                  "SessionToken": f"token{n}", "Expiration": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}))
"""


@pytest.fixture
def clean_aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No credentials anywhere (env, files, instance metadata); returns the config file path to fill."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", ENDPOINT_URL_ENV):
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "config"
    config.write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", raising=False)
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", raising=False)
    return config


async def test_environment_credentials_reach_the_sdk_identity(
    clean_aws_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDENVIRONMENT")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "env-token")
    identity = await BotoCredentialsResolver(boto3.Session()).get_identity(properties={})
    assert (identity.access_key_id, identity.secret_access_key, identity.session_token) == (
        "AKIDENVIRONMENT",
        "env-secret",
        "env-token",
    )


@pytest.fixture
def rotating_profile(clean_aws_env: Path, tmp_path: Path) -> str:
    """A profile whose credential_process hands out new short-lived keys on every call."""
    script = tmp_path / "creds.py"
    script.write_text(CREDENTIAL_PROCESS)
    counter = tmp_path / "counter"
    clean_aws_env.write_text(f"[profile rotating]\ncredential_process = {sys.executable} {script} {counter}\n")
    return "rotating"


async def test_refreshable_credentials_are_refreshed_by_boto3(rotating_profile: str) -> None:
    resolver = BotoCredentialsResolver(boto3.Session(profile_name=rotating_profile))
    first = await resolver.get_identity(properties={})
    second = await resolver.get_identity(properties={})
    # The process reports credentials inside boto3's 15-minute refresh window, so boto3 refreshes them on each use.
    assert first.access_key_id.startswith("AKIDROTATED")
    assert second.access_key_id != first.access_key_id
    assert second.session_token is not None and second.session_token.startswith("token")


async def test_missing_credentials_fail_connect_before_any_network(clean_aws_env: Path) -> None:
    def no_network() -> object:
        raise AssertionError("connect must not reach the HTTP client without credentials")

    transport = SageMakerTransport("kokoro-tts", "us-east-1", session=boto3.Session(), http_client_factory=no_network)
    with pytest.raises(TtsUnavailableError, match="no AWS credentials"):
        await transport.connect()


def test_region_is_required(clean_aws_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    with pytest.raises(TransportConfigError, match="AWS_REGION"):
        SageMakerTransport("kokoro-tts", None, session=boto3.Session())
    monkeypatch.setenv("AWS_REGION", "us-east-2")
    assert SageMakerTransport("kokoro-tts", None, session=boto3.Session()).region == "us-east-2"
