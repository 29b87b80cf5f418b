"""Speech: the weights cache (its own stack, deployed and filled first) and the Kokoro GPU endpoint."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Fn, Stack
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_s3 as s3
from constructs import Construct

from relay_infra.config import RelayConfig
from relay_infra.constructs.secure_bucket import AccessLogsBucket, SecureBucket
from relay_infra.constructs.tts_endpoint import TtsEndpoint, image_from_dockerfile, image_from_uri
from relay_infra.paths import KOKORO_GPU_DOCKERFILE


def weights_bucket_exports(config: RelayConfig) -> tuple[str, str]:
    """The export names of the weights bucket's name and ARN (``KokoroRelay-<env>-WeightsBucketName`` / ``...Arn``):
    fixed, so the importing stacks (and their cdk-nag acknowledgments) can spell them. Their values never change:
    an update never replaces the bucket."""
    return f"{config.stack_prefix}-WeightsBucketName", f"{config.stack_prefix}-WeightsBucketArn"


def import_weights_bucket(scope: Construct, config: RelayConfig) -> s3.IBucket:
    """The weights bucket in a stack other than SpeechData, through :func:`weights_bucket_exports`."""
    name_export, arn_export = weights_bucket_exports(config)
    return s3.Bucket.from_bucket_attributes(
        scope, "WeightsCache", bucket_name=Fn.import_value(name_export), bucket_arn=Fn.import_value(arn_export)
    )


class SpeechDataStack(Stack):
    """The S3 weights-cache bucket (and the access-log bucket of this app's buckets).

    A stack of its own so ``make deploy`` can create it, upload the KModel weights under
    ``relay:weightsPrefix``, and only then create the endpoint that loads them. The weights bucket is retained on
    destroy (it holds data) and so has no fixed name: CloudFormation generates one, and a deploy after a destroy
    creates a new bucket instead of failing on the retained one ("already exists"). Its name reaches the other
    stacks as an export that never changes (a bucket is never replaced by an update) and ``make deploy`` reads it
    from the ``WeightsBucketName`` output.
    """

    def __init__(self, scope: Construct, construct_id: str, *, config: RelayConfig, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.access_logs = AccessLogsBucket(self, "AccessLogs").bucket
        self.weights_bucket: s3.IBucket = SecureBucket(
            self,
            "WeightsCache",
            access_logs=self.access_logs,
            log_prefix="weights-cache/",
        ).bucket
        name_export, arn_export = weights_bucket_exports(config)
        CfnOutput(self, "WeightsBucketName", value=self.weights_bucket.bucket_name, export_name=name_export)
        CfnOutput(self, "WeightsBucketArn", value=self.weights_bucket.bucket_arn, export_name=arn_export)
        CfnOutput(self, "WeightsPrefix", value=config.weights_prefix)
        CfnOutput(self, "AccessLogsBucketName", value=self.access_logs.bucket_name)


class SpeechStack(Stack):
    """The Kokoro GPU image and the SageMaker endpoint that serves it, autoscaled on sessions."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: RelayConfig,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        weights_bucket = import_weights_bucket(self, config)
        image = (
            image_from_uri(self, "KokoroImage", config.tts_image_uri)
            if config.tts_image_uri
            else image_from_dockerfile(self, "KokoroImage", KOKORO_GPU_DOCKERFILE, ecr_assets.Platform.LINUX_AMD64)
        )
        self.tts = TtsEndpoint(
            self,
            "Tts",
            image=image,
            name_prefix=config.name_prefix,
            weights_bucket=weights_bucket,
            weights_bucket_arn_export=weights_bucket_exports(config)[1],
            weights_prefix=config.weights_prefix,
            instance_type=config.tts_instance_type,
            inference_ami_version=config.tts_inference_ami_version,
            min_instances=config.tts_min_instances,
            max_instances=config.tts_max_instances,
            sessions_per_instance=config.tts_sessions_per_instance,
            # a turn lives at most as long as the relay Lambda that runs it: its speech finishes on the old fleet
            update_drain_s=config.relay_timeout_s,
            autoscaled=config.tts_autoscaling,
        )
        self.endpoint_name = self.tts.endpoint_name
        self.endpoint_arn = self.tts.endpoint_arn
        CfnOutput(self, "EndpointName", value=self.endpoint_name)
