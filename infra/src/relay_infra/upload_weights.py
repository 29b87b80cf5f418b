"""Fill the weights-cache bucket before the endpoint that loads it is created (step 2 of ``make deploy``).

``python -m relay_infra.upload_weights [-c relay:key=value ...] [--weights-dir DIR]`` uploads a KModel weights
directory (config.json, one .pth, voices/*.pt) under ``relay:weightsPrefix`` of the weights-cache bucket of this
deployment's SpeechData stack (``<RelayConfig.stack_prefix>-SpeechData``), read from its ``WeightsBucketName``
output (CloudFormation names the bucket, so a deploy after a destroy gets a new one). Without ``--weights-dir`` it
uses the weights converted offline from the shipped int8 ONNX (``kokoro_server.convert``; docs/torch-weights.md).
A prefix that already holds a config.json is left as it is (re-runs are cheap); ``--force`` uploads again.

The voice packs installed on this machine (``kokoro-server voices install|fetch``, in ``$KOKORO_RELAY_CACHE/voices``)
go beside the model's, under ``<prefix>voices/``, so the endpoint serves the voices ``relay up`` serves here; with
none installed, the official English packs are fetched first (from ``$KOKORO_VOICES_URL``, the model's repository
by default, each checked against its pinned SHA-256). A pack already in the bucket is not uploaded again;
``--no-voices`` uploads the model's own voices only.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from relay_infra.config import ContextValues, RelayConfig
from relay_infra.paths import REPO_ROOT

MARKER = "config.json"
BUCKET_OUTPUT = "WeightsBucketName"


class WeightsBucketNotFoundError(LookupError):
    """The SpeechData stack, or its ``WeightsBucketName`` output, does not exist (yet)."""


def weights_bucket_name(cloudformation: Any, stack_name: str) -> str:
    """The weights-cache bucket of a deployed SpeechData stack (its ``WeightsBucketName`` output)."""
    from botocore.exceptions import ClientError  # noqa: PLC0415 - only this command talks to AWS

    try:
        stacks = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    except ClientError as exc:
        raise WeightsBucketNotFoundError(
            f"stack {stack_name} is not deployed in this account and region: deploy it first "
            f'(make deploy does: cdk deploy "{stack_name}")'
        ) from exc
    for output in stacks[0].get("Outputs", []):
        if output.get("OutputKey") == BUCKET_OUTPUT:
            return str(output["OutputValue"])
    raise WeightsBucketNotFoundError(f"stack {stack_name} has no {BUCKET_OUTPUT} output: redeploy it")


def prefix_is_filled(s3: Any, bucket: str, prefix: str) -> bool:
    """True when ``prefix`` already holds a weights directory (its config.json)."""
    response = s3.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}{MARKER}", MaxKeys=1)
    return bool(response.get("KeyCount", 0))


def upload_directory(s3: Any, directory: Path, bucket: str, prefix: str) -> list[str]:
    """Upload every file under ``directory`` to ``s3://bucket/prefix<relative path>``; the marker goes last so
    a half-finished upload is never taken for a complete one. Returns the keys written."""
    files = sorted(path for path in directory.rglob("*") if path.is_file())
    if not any(path.name == MARKER for path in files):
        raise FileNotFoundError(f"{directory} is not a KModel weights directory: it has no {MARKER}")
    files.sort(key=lambda path: path.name == MARKER)
    keys = []
    for path in files:
        key = prefix + path.relative_to(directory).as_posix()
        s3.upload_file(str(path), bucket, key)
        keys.append(key)
    return keys


def voice_files(directory: Path, *, fetch_english: Callable[[Path], object]) -> list[Path]:
    """The installed voice packs to upload (``<name>.pt`` and ``<name>.npy`` of ``directory``); when there are
    none, ``fetch_english(directory)`` installs the official English ones first (and must raise if it cannot)."""

    def installed() -> list[Path]:
        return sorted(path for path in directory.glob("*") if path.suffix in {".pt", ".npy"} and path.is_file())

    if not installed():
        fetch_english(directory)
    files = installed()
    if not files:
        raise FileNotFoundError(f"no voice packs in {directory} after fetching the English ones")
    return files


def upload_voices(s3: Any, files: list[Path], bucket: str, prefix: str) -> list[str]:
    """Upload each voice pack to ``s3://bucket/<prefix>voices/<file name>`` unless a file of that key is there
    already; returns the keys written."""
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}voices/").get("Contents", [])
    present = {item["Key"] for item in listed}
    keys = []
    for path in files:
        key = f"{prefix}voices/{path.name}"
        if key not in present:
            s3.upload_file(str(path), bucket, key)
            keys.append(key)
    return keys


def fetch_english(directory: Path) -> None:
    """Install the official English packs into ``directory`` (``kokoro-server voices fetch``, hashes checked)."""
    from kokoro_server.engines.voice_packs import ENGLISH_VOICES  # noqa: PLC0415 - only when nothing is installed
    from kokoro_server.voices_cli import default_base_url, run_fetch  # noqa: PLC0415

    print(f"no voice packs installed in {directory}: fetching the official English ones")
    run_fetch(list(ENGLISH_VOICES), directory, default_base_url())


def _installed_voices_dir() -> Path:
    from kokoro_server.engines.model_files import installed_voices_dir  # noqa: PLC0415

    return installed_voices_dir()


def _weights_dir(given: str | None) -> Path:
    if given:
        return Path(given)
    from kokoro_server.convert import ensure_converted_weights  # noqa: PLC0415 - heavy (torch), only when needed

    return Path(ensure_converted_weights())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m relay_infra.upload_weights", description=__doc__)
    parser.add_argument("--weights-dir", help="a KModel weights directory (default: converted from the ONNX)")
    parser.add_argument("--force", action="store_true", help="upload even if the prefix is already filled")
    parser.add_argument(
        "--no-voices", action="store_true", help="do not upload the installed voice packs (nor fetch English ones)"
    )
    parser.add_argument("-c", "--context", action="append", default=[], help="CDK context, key=value")
    args = parser.parse_args(argv)
    cdk_json = json.loads((REPO_ROOT / "infra" / "cdk.json").read_text(encoding="utf-8"))
    context = ContextValues.from_cdk_json(cdk_json, [f"--context={item}" for item in args.context])
    config = RelayConfig.from_context(context)

    import boto3  # noqa: PLC0415 - only this command talks to AWS

    session = boto3.session.Session()
    try:
        bucket = weights_bucket_name(session.client("cloudformation"), f"{config.stack_prefix}-SpeechData")
    except WeightsBucketNotFoundError as exc:
        print(f"upload_weights: {exc}", file=sys.stderr)
        return 1
    s3 = session.client("s3")
    if not args.no_voices:
        files = voice_files(_installed_voices_dir(), fetch_english=fetch_english)
        written = upload_voices(s3, files, bucket, config.weights_prefix)
        print(
            f"voices: {len(files)} installed packs, {len(written)} uploaded to s3://{bucket}/{config.weights_prefix}voices/"
        )
    if prefix_is_filled(s3, bucket, config.weights_prefix) and not args.force:
        print(f"s3://{bucket}/{config.weights_prefix} already holds weights; nothing to do (--force to replace)")
        return 0
    keys = upload_directory(s3, _weights_dir(args.weights_dir), bucket, config.weights_prefix)
    print(f"uploaded {len(keys)} files to s3://{bucket}/{config.weights_prefix}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
