"""Model providers for the agent: Bedrock, OpenAI-compatible / Ollama servers, and the offline ``speak`` model."""

from voice_agent.models.factory import make_model
from voice_agent.models.speak import SpeakModel, tokenize

__all__ = ["SpeakModel", "make_model", "tokenize"]
