"""Speech: the weights cache (its own stack, deployed and filled first) and the Kokoro GPU endpoint."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_s3 as s3
from constructs import Construct

from relay_infra.config import RelayConfig
from relay_infra.constructs.secure_bucket import AccessLogsBucket, SecureBucket
from relay_infra.constructs.tts_endpoint import TtsEndpoint, image_from_dockerfile, image_from_uri
from relay_infra.paths import KOKORO_GPU_DOCKERFILE


class SpeechDataStack(Stack):
    """The S3 weights-cache bucket (and the access-log bucket of this app's buckets).

    A stack of its own so ``make deploy`` can create it, upload the KModel weights under
    ``relay:weightsPrefix``, and only then create the endpoint that loads them.
    """

    def __init__(self, scope: Construct, construct_id: str, *, config: RelayConfig, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.access_logs = AccessLogsBucket(self, "AccessLogs").bucket
        self.weights_bucket: s3.IBucket = SecureBucket(
            self,
            "WeightsCache",
            access_logs=self.access_logs,
            log_prefix="weights-cache/",
            bucket_name=config.weights_bucket_name,
        ).bucket
        CfnOutput(self, "WeightsBucketName", value=self.weights_bucket.bucket_name)
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
        weights_bucket = s3.Bucket.from_bucket_name(self, "WeightsCache", config.weights_bucket_name)
        image = (
            image_from_uri(self, "KokoroImage", config.tts_image_uri)
            if config.tts_image_uri
            else image_from_dockerfile(self, "KokoroImage", KOKORO_GPU_DOCKERFILE, ecr_assets.Platform.LINUX_AMD64)
        )
        self.tts = TtsEndpoint(
            self,
            "Tts",
            image=image,
            weights_bucket=weights_bucket,
            weights_bucket_name=config.weights_bucket_name,
            weights_prefix=config.weights_prefix,
            instance_type=config.tts_instance_type,
            min_instances=config.tts_min_instances,
            max_instances=config.tts_max_instances,
            sessions_per_instance=config.tts_sessions_per_instance,
        )
        self.endpoint_name = self.tts.endpoint_name
        self.endpoint_arn = self.tts.endpoint_arn
        CfnOutput(self, "EndpointName", value=self.endpoint_name)
