"""S3 for the local stack: the agent's conversation-history bucket on a moto server (the one the local DynamoDB
runs on: a moto server answers every AWS API it knows), so that ``relay up`` keeps conversations the way AWS does.

The agent reaches it through the standard ``AWS_ENDPOINT_URL_S3`` variable (:func:`s3_environment`), the bucket
named by ``VOICE_AGENT_HISTORY_BUCKET`` (:data:`HISTORY_BUCKET` here)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import boto3

from relay_local.aws.account import LOCAL_REGION

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import ObjectIdentifierTypeDef

HISTORY_BUCKET: Final = "kokoro-relay-history"
"""The local stack's conversation-history bucket."""
S3_ENDPOINT_ENV: Final = "AWS_ENDPOINT_URL_S3"
"""The standard variable that sends boto3's S3 calls (Strands' ``S3SessionManager``'s) to another endpoint."""


def s3_environment(endpoint_url: str) -> dict[str, str]:
    """What a process (a ``voice-agent`` started by hand) needs to keep its history on the local moto."""
    return {S3_ENDPOINT_ENV: endpoint_url}


def s3_client(endpoint_url: str) -> S3Client:
    """A client of the moto at ``endpoint_url`` (moto's dummy credentials, the local region)."""
    return boto3.client(
        "s3",
        endpoint_url=endpoint_url,
        region_name=LOCAL_REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",  # noqa: S106 - moto dummy credentials
    )


class LocalBucket:
    """A bucket on a running moto: ``create()`` makes it (keeping what a bucket of that name already holds),
    ``delete()`` empties and removes it. moto's backend is process-wide, so a stack that deletes its bucket on stop
    leaves the next stack of the same process a clean one."""

    def __init__(self, name: str, endpoint_url: str) -> None:
        self.name = name
        self.endpoint_url = endpoint_url
        self.client = s3_client(endpoint_url)

    def create(self) -> LocalBucket:
        existing = {bucket["Name"] for bucket in self.client.list_buckets().get("Buckets", [])}
        if self.name not in existing:
            self.client.create_bucket(Bucket=self.name)
        return self

    def keys(self, prefix: str = "") -> list[str]:
        """Every key under ``prefix``, sorted."""
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.name, Prefix=prefix)
        return sorted(obj["Key"] for page in pages for obj in page.get("Contents", []))

    def delete(self) -> None:
        keys = self.keys()
        for start in range(0, len(keys), 1000):
            batch: list[ObjectIdentifierTypeDef] = [{"Key": key} for key in keys[start : start + 1000]]
            self.client.delete_objects(Bucket=self.name, Delete={"Objects": batch, "Quiet": True})
        self.client.delete_bucket(Bucket=self.name)


__all__ = ["HISTORY_BUCKET", "S3_ENDPOINT_ENV", "LocalBucket", "s3_client", "s3_environment"]
