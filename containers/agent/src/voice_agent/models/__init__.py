"""Model providers for the agent: Strands' Bedrock provider (also for the local stand-in's models) and its
OpenAI-compatible / Ollama provider."""

from voice_agent.models.factory import make_model

__all__ = ["make_model"]
