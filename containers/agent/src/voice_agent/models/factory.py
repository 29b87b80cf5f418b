"""Build the Strands model provider the configuration names.

There is one model path: ``bedrock`` (and ``speak``, which is only a name for the local echo model) is Strands'
``BedrockModel`` (as :class:`~voice_agent.models.bedrock.StoppableBedrockModel`, which stops the model when a turn
is cancelled), whose boto3 client reaches Bedrock, or locally the stand-in in ``relay_local.bedrock``, through
the standard ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` variable; ``openai`` / ``ollama`` is Strands' ``OpenAIModel``.
``speak`` signs with the stand-in's placeholder credentials (it checks none), so it needs no AWS account.
"""

from __future__ import annotations

import logging

from strands.models.model import Model

from relay_core.agent.defaults import ECHO_RATE_FIELD, LOCAL_CREDENTIAL, LOCAL_ECHO_MODEL_ID
from voice_agent.config import AgentConfig, ModelKind

logger = logging.getLogger(__name__)

OLLAMA_DEFAULT_BASE_URL = "http://127.0.0.1:11434/v1"


def make_model(config: AgentConfig) -> Model:
    """A fresh model provider (one per agent). Provider SDKs are imported only for the provider chosen."""
    if config.model in (ModelKind.SPEAK, ModelKind.BEDROCK):
        import boto3  # noqa: PLC0415 - provider SDKs load only when chosen

        from voice_agent.models.bedrock import StoppableBedrockModel  # noqa: PLC0415

        if config.model is ModelKind.SPEAK:
            logger.info("model: speak = %s on the Bedrock endpoint (echoes the prompt; no LLM)", LOCAL_ECHO_MODEL_ID)
            session = boto3.Session(
                aws_access_key_id=LOCAL_CREDENTIAL,
                aws_secret_access_key=LOCAL_CREDENTIAL,
                region_name=config.aws_region,
            )
            return StoppableBedrockModel(
                boto_session=session,
                model_id=LOCAL_ECHO_MODEL_ID,
                additional_request_fields={ECHO_RATE_FIELD: config.speak_tokens_per_s},
            )
        if config.model_id:
            return StoppableBedrockModel(region_name=config.aws_region, model_id=config.model_id)
        return StoppableBedrockModel(region_name=config.aws_region)
    from strands.models.openai import OpenAIModel  # noqa: PLC0415 - provider SDKs load only when chosen

    base_url = config.model_base_url or (OLLAMA_DEFAULT_BASE_URL if config.model is ModelKind.OLLAMA else None)
    client_args: dict[str, str] = {"api_key": config.model_api_key or "not-needed-for-local-servers"}
    if base_url:
        client_args["base_url"] = base_url
    assert config.model_id is not None  # AgentConfig requires it for these providers
    return OpenAIModel(client_args=client_args, model_id=config.model_id)


__all__ = ["OLLAMA_DEFAULT_BASE_URL", "make_model"]
