"""Agent: the voice agent container on AgentCore Runtime, pointed at the Speech stack's endpoint."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_bedrockagentcore as agentcore
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_s3 as s3
from constructs import Construct

from relay_infra.config import RelayConfig
from relay_infra.constructs.conversation_history import ConversationHistory
from relay_infra.constructs.tts_endpoint import ImageRef, image_from_dockerfile, image_from_uri
from relay_infra.constructs.voice_agent_runtime import VoiceAgentRuntime, runtime_name
from relay_infra.paths import AGENT_DOCKERFILE


class AgentStack(Stack):
    """The AgentCore runtime (arm64 image from containers/agent, or ``relay:agentImageUri``) and the bucket that
    keeps its conversations (server access logs to ``access_logs``)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: RelayConfig,
        endpoint_name: str,
        endpoint_arn: str,
        access_logs: s3.IBucket,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        # self.image: the agent image and its repository, which the dependency audit scans beside the Kokoro
        # image's: relay:agentImageUri, or built as an asset from a context of only what it installs (image_context).
        self.image: ImageRef
        if config.agent_image_uri:
            self.image = image_from_uri(self, "AgentImage", config.agent_image_uri)
            artifact = agentcore.AgentRuntimeArtifact.from_image_uri(config.agent_image_uri)
        else:
            self.image = image_from_dockerfile(self, "AgentImage", AGENT_DOCKERFILE, ecr_assets.Platform.LINUX_ARM64)
            artifact = agentcore.AgentRuntimeArtifact.from_ecr_repository(self.image.repository, self.image.tag)
        self.history = ConversationHistory(self, "ConversationHistory", access_logs=access_logs)
        self.agent = VoiceAgentRuntime(
            self,
            "VoiceAgent",
            artifact=artifact,
            name=runtime_name(config.project, config.environment),
            endpoint_name=endpoint_name,
            endpoint_arn=endpoint_arn,
            model_id=config.model_id,
            voice=config.voice,
            history=self.history,
        )
        self.runtime = self.agent.runtime
        self.runtime_arn = self.agent.runtime_arn
        CfnOutput(self, "AgentRuntimeArn", value=self.runtime_arn)
        CfnOutput(self, "HistoryBucketName", value=self.history.bucket.bucket_name)
