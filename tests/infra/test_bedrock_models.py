"""The Bedrock ARNs the agent's role may invoke: one model, never a wildcard model."""

from __future__ import annotations

import pytest

from relay_infra.bedrock_models import model_resource_arns


def test_foundation_model_is_granted_in_this_region_only() -> None:
    arns = model_resource_arns("amazon.nova-lite-v1:0", partition="aws", region="eu-west-1", account="111122223333")
    assert arns == ["arn:aws:bedrock:eu-west-1::foundation-model/amazon.nova-lite-v1:0"]


def test_inference_profile_grants_the_profile_and_its_model() -> None:
    arns = model_resource_arns(
        "us.anthropic.claude-haiku-4-5-20251001-v1:0", partition="aws", region="us-east-1", account="111122223333"
    )
    assert arns == [
        "arn:aws:bedrock:us-east-1:111122223333:inference-profile/us.anthropic.claude-haiku-4-5-20251001-v1:0",
        "arn:aws:bedrock:*::foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0",
    ]


@pytest.mark.parametrize("model_id", ["", "*", "amazon.*"])
def test_a_wildcard_model_is_refused(model_id: str) -> None:
    with pytest.raises(ValueError, match="one model"):
        model_resource_arns(model_id, partition="aws", region="us-east-1", account="111122223333")
