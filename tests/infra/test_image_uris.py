"""Images from context (``relay:ttsImageUri`` / ``relay:agentImageUri``): no image asset, pulls scoped to them."""

from __future__ import annotations

from typing import Any

import pytest
from tests.infra.conftest import AGENT_IMAGE_URI, TTS_IMAGE_URI, SynthesizedApp
from tests.infra.iam_statements import as_list, granting, rendered

from relay_infra.constructs.tts_endpoint import image_tag, parse_ecr_image_uri

TTS_URI, AGENT_URI = TTS_IMAGE_URI, AGENT_IMAGE_URI


@pytest.fixture(scope="module")
def templates(relay_app: SynthesizedApp) -> dict[str, Any]:
    return {"speech": relay_app.template("ImageUris-Speech"), "agent": relay_app.template("ImageUris-Agent")}


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
