"""S3 buckets the way this project keeps them: encrypted, TLS-only, never public, versioned, access-logged."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_s3 as s3
from constructs import Construct

from relay_infra.nag import Acknowledged, acknowledge


class AccessLogsBucket(Construct):
    """The destination of a stack's S3 server access logs (retained: logs outlive the stack)."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.OBJECT_WRITER,
            versioned=True,
            removal_policy=RemovalPolicy.RETAIN,
        )
        acknowledge(
            self.bucket,
            Acknowledged(
                "AwsSolutions-S1",
                "This bucket is the access-log destination; logging it into itself would loop.",
            ),
        )


class SecureBucket(Construct):
    """A private bucket: SSE-S3, TLS-only policy, public access blocked, versioned, access logs to ``access_logs``.

    Retained on ``cdk destroy`` (it holds data): the cleanup workflow empties and deletes it when asked.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        access_logs: s3.IBucket,
        log_prefix: str,
        bucket_name: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            bucket_name=bucket_name,
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            versioned=True,
            server_access_logs_bucket=access_logs,
            server_access_logs_prefix=log_prefix,
            removal_policy=RemovalPolicy.RETAIN,
        )
