"""Fill the weights-cache bucket before the endpoint that loads it is created (step 2 of ``make deploy``).

``python -m relay_infra.upload_weights [-c relay:key=value ...] [--weights-dir DIR]`` uploads a KModel weights
directory (config.json, one .pth, voices/*.pt) under ``relay:weightsPrefix`` of
``<project>-<environment>-weights-<account>-<region>``. Without ``--weights-dir`` it uses the weights converted
offline from the shipped int8 ONNX (``kokoro_server.convert``; docs/torch-weights.md). A prefix that already
holds a config.json is left as it is (re-runs are cheap); ``--force`` uploads again.
"""

from __future__ import annotations

import argparse
import json
import sys
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


def _weights_dir(given: str | None) -> Path:
    if given:
        return Path(given)
    from kokoro_server.convert import ensure_converted_weights  # noqa: PLC0415 - heavy (torch), only when needed

    return Path(ensure_converted_weights())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m relay_infra.upload_weights", description=__doc__)
    parser.add_argument("--weights-dir", help="a KModel weights directory (default: converted from the ONNX)")
    parser.add_argument("--force", action="store_true", help="upload even if the prefix is already filled")
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
    if prefix_is_filled(s3, bucket, config.weights_prefix) and not args.force:
        print(f"s3://{bucket}/{config.weights_prefix} already holds weights; nothing to do (--force to replace)")
        return 0
    keys = upload_directory(s3, _weights_dir(args.weights_dir), bucket, config.weights_prefix)
    print(f"uploaded {len(keys)} files to s3://{bucket}/{config.weights_prefix}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
