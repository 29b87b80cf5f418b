"""Filling the weights cache before the endpoint exists: marker last, re-runs skip a filled prefix."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from kokoro_server.engines.errors import ModelFilesError
from relay_infra import upload_weights
from relay_infra.upload_weights import (
    WeightsBucketNotFoundError,
    fetch_english,
    prefix_is_filled,
    upload_directory,
    upload_voices,
    voice_files,
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


def test_the_installed_voices_go_beside_the_models_once(s3: Any, official_voices: Path, tmp_path: Path) -> None:
    installed = tmp_path / "voices"
    installed.mkdir()
    for name in ("af_heart", "bf_emma"):
        shutil.copy(official_voices / f"{name}.pt", installed / f"{name}.pt")
    (installed / "notes.txt").write_text("not a pack")

    def must_not_fetch(directory: Path) -> None:
        raise AssertionError(f"packs are installed in {directory}: nothing to fetch")

    files = voice_files(installed, fetch_english=must_not_fetch)
    assert [path.name for path in files] == ["af_heart.pt", "bf_emma.pt"]
    assert upload_voices(s3, files, "weights", "kokoro-82m/") == [
        "kokoro-82m/voices/af_heart.pt",
        "kokoro-82m/voices/bf_emma.pt",
    ]
    body = s3.get_object(Bucket="weights", Key="kokoro-82m/voices/af_heart.pt")["Body"].read()
    assert body == (official_voices / "af_heart.pt").read_bytes()
    assert upload_voices(s3, files, "weights", "kokoro-82m/") == [], "a pack already in the bucket is not sent again"


def test_with_no_voices_installed_the_official_english_ones_are_fetched_and_checked(
    s3: Any,
    official_voices: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    serve_voices: Callable[[Path], AbstractContextManager[str]],
) -> None:
    from kokoro_server.engines.voice_packs import ENGLISH_VOICES  # noqa: PLC0415
    from kokoro_server.voices_cli import BASE_URL_ENV  # noqa: PLC0415

    installed = tmp_path / "cache" / "voices"
    with serve_voices(official_voices) as base_url:
        monkeypatch.setenv(BASE_URL_ENV, base_url)
        files = voice_files(installed, fetch_english=fetch_english)
    assert sorted(path.stem for path in files) == sorted(ENGLISH_VOICES)
    keys = upload_voices(s3, files, "weights", "kokoro-82m/")
    assert len(keys) == len(ENGLISH_VOICES) == 28

    tampered = tmp_path / "served"
    shutil.copytree(official_voices, tampered)
    (tampered / "af_heart.pt").write_bytes(b"not the official pack")
    with serve_voices(tampered) as base_url:
        monkeypatch.setenv(BASE_URL_ENV, base_url)
        with pytest.raises(ModelFilesError, match="SHA-256"):
            voice_files(tmp_path / "empty", fetch_english=fetch_english)
    assert not list((tmp_path / "empty").glob("*.pt")), "a refused download installs nothing"


def test_the_docstring_says_where_the_bucket_name_comes_from() -> None:
    """The bucket's name is CloudFormation's, read from the SpeechData stack's output: no fixed name pattern."""
    doc = upload_weights.__doc__ or ""
    assert upload_weights.BUCKET_OUTPUT in doc and "SpeechData" in doc
    assert "-weights-<account>" not in doc
