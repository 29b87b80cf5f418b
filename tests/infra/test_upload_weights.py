"""Filling the weights cache before the endpoint exists: marker last, re-runs skip a filled prefix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from relay_infra.upload_weights import (
    WeightsBucketNotFoundError,
    prefix_is_filled,
    upload_directory,
    weights_bucket_name,
)


@pytest.fixture
def s3() -> Any:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="weights")
        yield client


def _weights(tmp_path: Path) -> Path:
    (tmp_path / "voices").mkdir()
    (tmp_path / "voices" / "jf_alpha.pt").write_bytes(b"voice")
    (tmp_path / "kokoro-v1_0.pth").write_bytes(b"weights")
    (tmp_path / "config.json").write_text("{}")
    return tmp_path


def test_upload_puts_the_directory_under_the_prefix_with_the_marker_last(s3: Any, tmp_path: Path) -> None:
    assert not prefix_is_filled(s3, "weights", "kokoro-82m/")
    keys = upload_directory(s3, _weights(tmp_path), "weights", "kokoro-82m/")
    assert keys[-1] == "kokoro-82m/config.json"
    assert set(keys) == {"kokoro-82m/config.json", "kokoro-82m/kokoro-v1_0.pth", "kokoro-82m/voices/jf_alpha.pt"}
    assert s3.get_object(Bucket="weights", Key="kokoro-82m/voices/jf_alpha.pt")["Body"].read() == b"voice"
    assert prefix_is_filled(s3, "weights", "kokoro-82m/")
    assert not prefix_is_filled(s3, "weights", "other/")


def test_a_directory_without_config_is_refused_before_uploading(s3: Any, tmp_path: Path) -> None:
    (tmp_path / "kokoro-v1_0.pth").write_bytes(b"weights")
    with pytest.raises(FileNotFoundError, match=r"config\.json"):
        upload_directory(s3, tmp_path, "weights", "kokoro-82m/")
    assert s3.list_objects_v2(Bucket="weights").get("KeyCount") == 0


def test_the_bucket_name_comes_from_the_speech_data_stack_output() -> None:
    with mock_aws():
        cloudformation = boto3.client("cloudformation", region_name="us-east-1")
        with pytest.raises(WeightsBucketNotFoundError, match="not deployed"):
            weights_bucket_name(cloudformation, "KokoroRelay-dev-SpeechData")
        template = {
            "Resources": {"Bucket": {"Type": "AWS::S3::Bucket"}},
            "Outputs": {"WeightsBucketName": {"Value": {"Ref": "Bucket"}}},
        }
        cloudformation.create_stack(StackName="KokoroRelay-dev-SpeechData", TemplateBody=json.dumps(template))
        name = weights_bucket_name(cloudformation, "KokoroRelay-dev-SpeechData")
        assert name in [b["Name"] for b in boto3.client("s3", region_name="us-east-1").list_buckets()["Buckets"]]
