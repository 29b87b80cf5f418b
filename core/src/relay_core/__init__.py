"""relay_core: the sans-I/O heart of Kokoro Relay.

Every wire message, limit and state machine of the project lives here, with no I/O: bytes and events in,
bytes and events out. The TTS container, the voice agent, the local stack and the tests all import it, so
no message is spelled out twice.
"""
