"""Which ARNs ``bedrock:InvokeModel*`` must name for a configured model id, and nothing wider."""

from __future__ import annotations

INFERENCE_PROFILE_PREFIXES = ("us.", "eu.", "apac.", "jp.", "au.", "ca.", "us-gov.", "global.")
"""Cross-region inference profile ids start with a geography: ``us.amazon.nova-lite-v1:0``."""


def is_inference_profile(model_id: str) -> bool:
    """True for a system-defined cross-region inference profile id (``us.…``, ``eu.…``, ``global.…``)."""
    return model_id.startswith(INFERENCE_PROFILE_PREFIXES)


def model_resource_arns(model_id: str, *, partition: str, region: str, account: str) -> list[str]:
    """The ARNs the agent may invoke for ``model_id``.

    A foundation model: its ARN in this region only. An inference profile: the profile in this account and
    region, plus the foundation model it routes to in any region (the profile picks the region per request,
    so the region part is necessarily ``*``).
    """
    if not model_id or "*" in model_id:
        raise ValueError(f"relay:modelId must name one model, got {model_id!r}")
    if not is_inference_profile(model_id):
        return [f"arn:{partition}:bedrock:{region}::foundation-model/{model_id}"]
    base = model_id.split(".", 1)[1]
    return [
        f"arn:{partition}:bedrock:{region}:{account}:inference-profile/{model_id}",
        f"arn:{partition}:bedrock:*::foundation-model/{base}",
    ]
