"""TTS transports: how the agent reaches a Kokoro session (``ws`` locally, ``sagemaker`` when deployed)."""

from voice_agent.transport.base import TtsConnection, TtsTransport

__all__ = ["TtsConnection", "TtsTransport"]
