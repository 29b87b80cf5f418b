"""The Kokoro TTS endpoint: SageMaker model, endpoint config and endpoint, its role, and its autoscaling.

The execution role may read only the weights prefix of the weights-cache bucket and pull only the Kokoro
image. Autoscaling tracks sessions per instance, never CPU (a GPU instance saturates on sessions long before its
CPUs look busy): SageMaker's concurrent requests, and the container's own open and queued sessions
(:mod:`relay_infra.constructs.session_scaling`).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk import ArnFormat, IgnoreMode, Stack, Stage
from aws_cdk import aws_applicationautoscaling as autoscaling
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from relay_infra.constructs.session_scaling import (
    SCALE_IN_COOLDOWN,
    SCALE_OUT_COOLDOWN,
    queue_step_policy,
    session_demand_policy,
)
from relay_infra.image_context import stage_image_context
from relay_infra.nag import Acknowledged, acknowledge
from relay_infra.paths import REPO_ROOT

VARIANT_NAME = "AllTraffic"
ROUTING_STRATEGY = "LEAST_OUTSTANDING_REQUESTS"
"""A TTS session is long-lived: route each new one to the instance with the fewest open, not at random."""
SAGEMAKER_NAME_MAX = 63
DIGEST_LENGTH = 12
SCALING_METRIC = autoscaling.PredefinedMetric.SAGEMAKER_VARIANT_CONCURRENT_REQUESTS_PER_MODEL_HIGH_RESOLUTION
MODEL_DIR = "/opt/ml/model"
UPDATE_LAUNCH_ALLOWANCE_S = 3600
"""Time an endpoint update may take beyond the drain: launching the new fleet (its 600 s model download and 600 s
health-check timeouts) with room to spare. SageMaker wants MaximumExecutionTimeoutInSeconds larger than the waits."""
STAGED_CONTEXT_PREFIX = "image-context."
"""An image's staged build context is ``<cloud assembly>/image-context.<Dockerfile path, / as _>``, rewritten at
each synth (the same Dockerfile always stages the same context)."""


@dataclass(frozen=True, slots=True)
class ImageRef:
    """A container image and the ECR repository it must be pulled from."""

    uri: str
    repository: ecr.IRepository
    tag: str
    identity: str
    """What changes exactly when the image does: the pushed URI, or the asset's source hash."""


def parse_ecr_image_uri(uri: str) -> tuple[str, str, str]:
    """``<account>.dkr.ecr.<region>.amazonaws.com/<repo>[:tag|@digest]`` → (account, region, repository name)."""
    host, _, rest = uri.partition("/")
    parts = host.split(".")
    if len(parts) < 6 or parts[1:3] != ["dkr", "ecr"] or not rest:
        raise ValueError(f"not an ECR image URI (<account>.dkr.ecr.<region>.amazonaws.com/<repo>:<tag>): {uri!r}")
    name = rest.split("@", 1)[0].rsplit(":", 1)[0] if "@" in rest or ":" in rest else rest
    return parts[0], parts[3], name


def image_tag(uri: str) -> str:
    """The tag of an image URI (``latest`` when it has none; the digest when pinned by digest)."""
    rest = uri.partition("/")[2]
    if "@" in rest:
        return rest.split("@", 1)[1]
    return rest.rsplit(":", 1)[1] if ":" in rest else "latest"


def image_from_uri(scope: Construct, construct_id: str, uri: str) -> ImageRef:
    """An already pushed ECR image (context ``relay:ttsImageUri`` / ``relay:agentImageUri``)."""
    account, region, name = parse_ecr_image_uri(uri)
    repository = ecr.Repository.from_repository_attributes(
        scope,
        construct_id,
        repository_arn=f"arn:{Stack.of(scope).partition}:ecr:{region}:{account}:repository/{name}",
        repository_name=name,
    )
    return ImageRef(uri, repository, image_tag(uri), uri)


def image_from_dockerfile(
    scope: Construct,
    construct_id: str,
    dockerfile: str,
    platform: ecr_assets.Platform,
    *,
    repo_root: Path = REPO_ROOT,
) -> ImageRef:
    """Build ``dockerfile`` at deploy time from a build context staged at synth beside the cloud assembly
    (:func:`relay_infra.image_context.stage_image_context`): only what the image installs, its own cut of uv.lock
    included, so its asset hash (the image's identity) changes only when that does."""
    stage = Stage.of(scope)
    if stage is None:
        raise ValueError(f"{construct_id}: an image asset must be inside a CDK App or Stage")
    context = Path(stage.outdir) / (STAGED_CONTEXT_PREFIX + dockerfile.replace("/", "_"))
    shutil.rmtree(context, ignore_errors=True)
    stage_image_context(dockerfile, context, repo_root)
    asset = ecr_assets.DockerImageAsset(
        scope,
        construct_id,
        directory=str(context),
        file=dockerfile,
        platform=platform,
        ignore_mode=IgnoreMode.DOCKER,
    )
    return ImageRef(asset.image_uri, asset.repository, asset.image_tag, asset.asset_hash)


def sagemaker_name(prefix: str, *, digest_of: Any = None) -> str:
    """A SageMaker resource name: lowercase (SageMaker ARNs are lowercase and IAM matches case-sensitively),
    ``<prefix>`` alone, or ``<prefix>-<12 hex digits of digest_of>`` for a resource CloudFormation replaces when
    its properties change (a replacement is created before the old one is deleted, so it needs a new name).
    Raises ``ValueError`` for a name SageMaker would refuse."""
    name = prefix
    if digest_of is not None:
        text = json.dumps(digest_of, sort_keys=True, separators=(",", ":"))
        name = f"{prefix}-{hashlib.sha256(text.encode()).hexdigest()[:DIGEST_LENGTH]}"
    if name != name.lower() or len(name) > SAGEMAKER_NAME_MAX or not name.replace("-", "").isalnum():
        raise ValueError(f"{name!r} is not a lowercase SageMaker name of at most {SAGEMAKER_NAME_MAX} characters")
    return name


class TtsEndpoint(Construct):
    """Kokoro-82M on a SageMaker AI real-time endpoint (GPU), bidirectional streaming, autoscaled on sessions."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        image: ImageRef,
        name_prefix: str,
        weights_bucket: s3.IBucket,
        weights_bucket_arn_export: str,
        weights_prefix: str,
        instance_type: str,
        inference_ami_version: str,
        min_instances: int,
        max_instances: int,
        sessions_per_instance: int,
        update_drain_s: int,
        autoscaled: bool = True,
    ) -> None:
        super().__init__(scope, construct_id)
        self.image = image
        self.role = iam.Role(
            self,
            "ExecutionRole",
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
            description="Kokoro TTS endpoint: reads its weights prefix, pulls its image, writes its logs and metrics",
        )
        weights_bucket.grant_read(self.role, f"{weights_prefix}*")
        image.repository.grant_pull(self.role)
        stack = Stack.of(self)
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
                resources=[
                    stack.format_arn(
                        service="logs",
                        resource="log-group",
                        resource_name="/aws/sagemaker/Endpoints/*",
                        arn_format=ArnFormat.COLON_RESOURCE_NAME,
                    )
                ],
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["cloudwatch:PutMetricData"],
                resources=["*"],
                conditions={"StringEquals": {"cloudwatch:namespace": "/aws/sagemaker/Endpoints"}},
            )
        )
        acknowledge(
            self.role,
            Acknowledged(
                "AwsSolutions-IAM5",
                "Reads only the objects under the weights prefix (object keys are not known in advance); the "
                "grant's s3:GetObject*/List* action groups are the read-only set CDK's grantRead uses.",
                (
                    "Action::s3:GetObject*",
                    "Action::s3:GetBucket*",
                    "Action::s3:List*",
                    f"Resource::{weights_bucket_arn_export}/{weights_prefix}*",
                ),
            ),
            Acknowledged(
                "AwsSolutions-IAM5",
                "SageMaker names the endpoint's log groups /aws/sagemaker/Endpoints/<endpoint>, created at run "
                "time; PutMetricData has no resource-level permission (limited to the SageMaker namespace by "
                "condition); ecr:GetAuthorizationToken requires Resource '*'.",
                (
                    "Resource::arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:"
                    "/aws/sagemaker/Endpoints/*",
                    "Resource::*",
                ),
            ),
        )

        base_name = f"{name_prefix}-tts"
        self.endpoint_name = sagemaker_name(base_name)
        """Fixed for the deployment's life: the agent, the dashboard and the ops workflows address it by name."""
        environment = {
            "KOKORO_ENGINE": "torch",
            "KOKORO_WEIGHTS_DIR": MODEL_DIR,
            "KOKORO_DEVICE": "cuda",
            # the EndpointName dimension of the container's session metrics, which the session policies query
            "KOKORO_METRICS_ENDPOINT": self.endpoint_name,
        }
        model_data_uri = f"s3://{weights_bucket.bucket_name}/{weights_prefix}"
        self.model_name = sagemaker_name(
            base_name,
            digest_of={
                "image": image.identity,
                "environment": environment,
                "modelData": stack.resolve(model_data_uri),
                "role": stack.resolve(self.role.role_arn),
            },
        )
        """Changes with the image, its settings and its weights: each is a new Model (CloudFormation replaces it)."""
        self.model = sagemaker.CfnModel(
            self,
            "Model",
            model_name=self.model_name,
            execution_role_arn=self.role.role_arn,
            primary_container=sagemaker.CfnModel.ContainerDefinitionProperty(
                image=image.uri,
                mode="SingleModel",
                model_data_source=sagemaker.CfnModel.ModelDataSourceProperty(
                    s3_data_source=sagemaker.CfnModel.S3DataSourceProperty(
                        s3_uri=model_data_uri,
                        s3_data_type="S3Prefix",
                        compression_type="None",
                    )
                ),
                environment=environment,
            ),
        )
        self.model.node.add_dependency(self.role)
        variant: dict[str, Any] = {
            "variant_name": VARIANT_NAME,
            "model_name": self.model_name,
            "initial_instance_count": min_instances,
            "instance_type": instance_type,
            "inference_ami_version": inference_ami_version,
            "initial_variant_weight": 1.0,
            "container_startup_health_check_timeout_in_seconds": 600,
            "model_data_download_timeout_in_seconds": 600,
        }
        self.endpoint_config_name = sagemaker_name(base_name, digest_of={**variant, "routing": ROUTING_STRATEGY})
        """Changes with the model and every variant setting: each change is a new EndpointConfig."""
        self.endpoint_config = sagemaker.CfnEndpointConfig(
            self,
            "EndpointConfig",
            endpoint_config_name=self.endpoint_config_name,
            production_variants=[
                sagemaker.CfnEndpointConfig.ProductionVariantProperty(
                    # the same name as a reference, so every engine creates the model first
                    **{**variant, "model_name": self.model.attr_model_name},
                    routing_config=sagemaker.CfnEndpointConfig.RoutingConfigProperty(routing_strategy=ROUTING_STRATEGY),
                )
            ],
        )
        acknowledge(
            self.endpoint_config,
            Acknowledged(
                "AwsSolutions-SM2",
                "GPU instance types with local NVMe instance storage (ml.g5, ml.g6) reject a KmsKeyId; their "
                "instance storage is hardware-encrypted by AWS. The model holds no customer data.",
            ),
        )
        acknowledge(
            self.model,
            Acknowledged(
                "AwsSolutions-SM1",
                "No VPC: the container needs nothing private, and a VPC would add NAT gateways or endpoints for "
                "S3/ECR/CloudWatch at a cost larger than the endpoint's own. Network isolation is by IAM.",
            ),
        )
        self.endpoint = sagemaker.CfnEndpoint(
            self,
            "Endpoint",
            endpoint_name=self.endpoint_name,
            endpoint_config_name=self.endpoint_config.attr_endpoint_config_name,
            # Keep the instance count that autoscaling reached (and the weight) when a new config is rolled out.
            retain_all_variant_properties=True,
            deployment_config=update_policy(update_drain_s),
        )
        self.endpoint_arn = self.arn("endpoint", self.endpoint_name)

        self.endpoint_config_arn = self.arn("endpoint-config", self.endpoint_config_name)
        self.model_arn = self.arn("model", self.model_name)

        self.scaling: autoscaling.ScalableTarget | None = None
        """The variant's scalable target; None when not ``autoscaled`` (relay:ttsAutoscaling=false), the first of
        the two deploys that change the instance type: SageMaker refuses that change on a scaling target."""
        if autoscaled:
            scaling = autoscaling.ScalableTarget(
                self,
                "Scaling",
                service_namespace=autoscaling.ServiceNamespace.SAGEMAKER,
                resource_id=f"endpoint/{self.endpoint_name}/variant/{VARIANT_NAME}",
                scalable_dimension="sagemaker:variant:DesiredInstanceCount",
                min_capacity=min_instances,
                max_capacity=max_instances,
            )
            scaling.node.add_dependency(self.endpoint)
            scaling.scale_to_track_metric(
                "ConcurrentSessions",
                target_value=float(sessions_per_instance),
                predefined_metric=SCALING_METRIC,
                scale_out_cooldown=SCALE_OUT_COOLDOWN,
                scale_in_cooldown=SCALE_IN_COOLDOWN,
            )
            # what the container itself counts, whatever the built-in metric turns out to count (docs/capacity.md)
            session_demand_policy(
                self,
                "SessionDemand",
                target=scaling,
                endpoint_name=self.endpoint_name,
                sessions_per_instance=sessions_per_instance,
            )
            queue_step_policy(
                scaling, "QueuedSessions", endpoint_name=self.endpoint_name, sessions_per_instance=sessions_per_instance
            )
            self.scaling = scaling

    def arn(self, resource: str, name: str) -> str:
        """The ARN of this deployment's SageMaker ``resource`` (``endpoint``, ``endpoint-config``, ``model``)
        named ``name``: built from the lowercase name, never from a CloudFormation attribute."""
        return Stack.of(self).format_arn(service="sagemaker", resource=resource, resource_name=name)


def update_policy(drain_s: int) -> sagemaker.CfnEndpoint.DeploymentConfigProperty:
    """How SageMaker replaces the fleet on a new endpoint config: blue/green, all traffic to the new fleet at once,
    then the old fleet kept ``drain_s`` seconds (TerminationWaitInSeconds) so the sessions open on it finish.

    Not rolling: a rolling batch must be 5-50% of the variant's instances (no valid batch at 1 instance), and
    SageMaker documents no wait before it terminates an old batch, so the sessions on it would be cut. The price is
    a second fleet as large as the first while the update runs: the instance quota must be twice the instances the
    variant has then, up to 2 x ttsMaxInstances (preflight's quota check says so)."""
    if not 0 <= drain_s <= 3600:
        raise ValueError(
            f"the endpoint update's drain is {drain_s} s; SageMaker's TerminationWaitInSeconds takes 0..3600: "
            "set relay:relayTimeoutS (a turn's longest life) to at most 900"
        )
    return sagemaker.CfnEndpoint.DeploymentConfigProperty(
        blue_green_update_policy=sagemaker.CfnEndpoint.BlueGreenUpdatePolicyProperty(
            traffic_routing_configuration=sagemaker.CfnEndpoint.TrafficRoutingConfigProperty(
                type="ALL_AT_ONCE", wait_interval_in_seconds=0
            ),
            termination_wait_in_seconds=drain_s,
            maximum_execution_timeout_in_seconds=drain_s + UPDATE_LAUNCH_ALLOWANCE_S,
        )
    )
