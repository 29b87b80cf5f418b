"""Images from context (``relay:ttsImageUri`` / ``relay:agentImageUri``): no image asset, pulls scoped to them."""

from __future__ import annotations

from typing import Any

import pytest
from tests.infra.iam_statements import as_list, granting, rendered

from relay_infra.constructs.tts_endpoint import image_tag, parse_ecr_image_uri

TTS_URI = "111122223333.dkr.ecr.eu-west-1.amazonaws.com/kokoro-tts:gpu-1"
AGENT_URI = "111122223333.dkr.ecr.eu-west-1.amazonaws.com/kokoro-agent@sha256:abc"


@pytest.fixture(scope="module")
def templates() -> dict[str, Any]:
    from aws_cdk import App  # noqa: PLC0415
    from aws_cdk.assertions import Template  # noqa: PLC0415

    from relay_infra.config import RelayConfig  # noqa: PLC0415
    from relay_infra.stacks.agent import AgentStack  # noqa: PLC0415
    from relay_infra.stacks.speech import SpeechStack  # noqa: PLC0415

    config = RelayConfig(tts_image_uri=TTS_URI, agent_image_uri=AGENT_URI)
    app = App()
    speech = SpeechStack(app, "Speech", config=config)
    agent = AgentStack(
        app,
        "Agent",
        config=config,
        endpoint_name="kokoro",
        endpoint_arn="arn:aws:sagemaker:eu-west-1:111122223333:endpoint/kokoro",
    )
    return {
        "speech": Template.from_stack(speech).to_json(),
        "agent": Template.from_stack(agent).to_json(),
    }


def test_parse_ecr_image_uris() -> None:
    assert parse_ecr_image_uri(TTS_URI) == ("111122223333", "eu-west-1", "kokoro-tts")
    assert parse_ecr_image_uri(AGENT_URI) == ("111122223333", "eu-west-1", "kokoro-agent")
    assert (image_tag(TTS_URI), image_tag(AGENT_URI)) == ("gpu-1", "sha256:abc")
    with pytest.raises(ValueError, match="not an ECR image URI"):
        parse_ecr_image_uri("docker.io/library/python:3.12")


def test_the_given_images_are_used_and_nothing_is_built(templates: dict[str, Any]) -> None:
    (model,) = [r for r in templates["speech"]["Resources"].values() if r["Type"] == "AWS::SageMaker::Model"]
    assert model["Properties"]["PrimaryContainer"]["Image"] == TTS_URI
    (runtime,) = [r for r in templates["agent"]["Resources"].values() if r["Type"] == "AWS::BedrockAgentCore::Runtime"]
    assert AGENT_URI in rendered(runtime["Properties"]["AgentRuntimeArtifact"])
    assert "DockerImage" not in rendered(templates["speech"]) + rendered(templates["agent"])


def test_the_endpoint_role_pulls_only_the_given_repository(templates: dict[str, Any]) -> None:
    (pull,) = granting(templates["speech"], "ecr:BatchGetImage")
    assert "repository/kokoro-tts" in rendered(pull["Resource"])
    assert "*" not in rendered(pull["Resource"])
    assert len(as_list(pull["Resource"])) == 1
