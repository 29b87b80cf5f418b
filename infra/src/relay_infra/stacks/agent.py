"""Agent: the voice agent container on AgentCore Runtime, pointed at the Speech stack's endpoint."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, IgnoreMode, Stack
from aws_cdk import aws_bedrockagentcore as agentcore
from aws_cdk import aws_ecr_assets as ecr_assets
from constructs import Construct

from relay_infra.config import RelayConfig
from relay_infra.constructs.tts_endpoint import image_tag
from relay_infra.constructs.voice_agent_runtime import VoiceAgentRuntime, runtime_name
from relay_infra.paths import AGENT_DOCKERFILE, AGENT_IMAGE_SOURCES, REPO_ROOT, image_context_excludes


class AgentStack(Stack):
    """The AgentCore runtime (arm64 image from containers/agent, or ``relay:agentImageUri``)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: RelayConfig,
        endpoint_name: str,
        endpoint_arn: str,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.image_tag = image_tag(config.agent_image_uri) if config.agent_image_uri else None
        """The pushed image's tag (``relay:agentImageUri``); None when the image is built as an asset."""
        artifact = (
            agentcore.AgentRuntimeArtifact.from_image_uri(config.agent_image_uri)
            if config.agent_image_uri
            else agentcore.AgentRuntimeArtifact.from_asset(
                str(REPO_ROOT),
                file=AGENT_DOCKERFILE,
                platform=ecr_assets.Platform.LINUX_ARM64,
                exclude=image_context_excludes(AGENT_IMAGE_SOURCES),
                ignore_mode=IgnoreMode.DOCKER,
            )
        )
        self.agent = VoiceAgentRuntime(
            self,
            "VoiceAgent",
            artifact=artifact,
            name=runtime_name(config.environment),
            endpoint_name=endpoint_name,
            endpoint_arn=endpoint_arn,
            model_id=config.model_id,
            voice=config.voice,
        )
        self.runtime = self.agent.runtime
        self.runtime_arn = self.agent.runtime_arn
        CfnOutput(self, "AgentRuntimeArn", value=self.runtime_arn)
