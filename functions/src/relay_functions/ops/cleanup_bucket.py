"""Lambda task ``relay_functions.ops.cleanup_bucket.handler``: empty the weights-cache bucket (every object version
and delete marker), then delete it.

Input ``{"bucket", "max_batches"?}``; output ``{"done", "deleted"}``. Each call deletes at most ``max_batches``
batches of 1000 versions (so one call stays well inside the function's timeout); the workflow calls again until
``done``. A bucket that does not exist is done (NotFound counts as success).
"""

from __future__ import annotations

from typing import Any, Final

import boto3
from aws_lambda_powertools import Logger
from botocore.exceptions import ClientError

from relay_functions.ops.errors import DeleteRefusedError, InvalidTaskInputError

logger = Logger(service="relay-ops")
BATCH: Final = 1000
DEFAULT_MAX_BATCHES: Final = 50


def empty_and_delete(s3: Any, bucket: str, *, max_batches: int = DEFAULT_MAX_BATCHES) -> dict[str, Any]:
    deleted = 0
    try:
        for _ in range(max_batches):
            page = s3.list_object_versions(Bucket=bucket, MaxKeys=BATCH)
            keys = [
                {"Key": v["Key"], "VersionId": v["VersionId"]}
                for v in [*page.get("Versions", []), *page.get("DeleteMarkers", [])]
            ]
            if not keys:
                s3.delete_bucket(Bucket=bucket)
                return {"done": True, "deleted": deleted}
            answer = s3.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
            if answer.get("Errors"):
                first = answer["Errors"][0]
                raise DeleteRefusedError(
                    f"S3 refused to delete {len(answer['Errors'])} object version(s) of {bucket}, e.g. "
                    f"{first.get('Key')}: {first.get('Code')}: {first.get('Message')}"
                )
            deleted += len(keys)
    except ClientError as exc:
        error = exc.response["Error"]
        if error.get("Code") == "NoSuchBucket":
            return {"done": True, "deleted": deleted}
        raise DeleteRefusedError(
            f"S3 refused to empty or delete {bucket}: {error.get('Code')}: {error.get('Message')}"
        ) from exc
    return {"done": False, "deleted": deleted}


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    bucket = event.get("bucket")
    if not isinstance(bucket, str) or not bucket:
        raise InvalidTaskInputError("give 'bucket', the weights-cache bucket name")
    max_batches = int(event.get("max_batches", DEFAULT_MAX_BATCHES))
    result = empty_and_delete(boto3.client("s3"), bucket, max_batches=max_batches)
    logger.info("weights bucket cleanup", bucket=bucket, **result)
    return result


__all__ = ["empty_and_delete", "handler"]
