"""relay_core: the sans-I/O heart of Kokoro Relay.

Every wire message, limit and state machine of the project lives here, with no I/O: bytes and events in,
bytes and events out. The TTS container, the voice agent, the local stack and the tests all import it, so
no message is spelled out twice.

What a user of the core imports is named here (``__all__``): the one family of turn events (the agent events of
§3), the numbered envelope that carries them to clients, the client's protocol and state machine, the relay's
framer, the TTS session's two ends, the speech options every request carries, the audio piece and its codecs,
SSE framing and the exception tree's roots.
Everything else (every limit, the TTS session's messages, the relay's own machine, the turn record) stays in its
module, imported by name: ``from relay_core import limits``, ``from relay_core.tts.messages import Synthesize``.
Importing the package loads the standard library and nothing else.
"""

from relay_core.agent.events import (
    AgentCancel,
    AgentEnd,
    AgentErrorCode,
    AgentEvent,
    AgentFailed,
    AgentPayload,
    AgentStart,
    AudioChunk,
    AudioStreamEnd,
    AudioStreamStart,
    TextDelta,
    TurnMode,
    TurnStatus,
    parse_event,
    parse_request,
    serialize_event,
)
from relay_core.audio_piece import AudioPiece, Codec
from relay_core.client.framing import TurnFramer
from relay_core.client.messages import (
    Cancel,
    ClientErrorCode,
    Rejection,
    Resume,
    SendMessage,
    TurnAccepted,
    parse_client_message,
)
from relay_core.client.session import ClientEvent, ClientSession, TurnOutcome
from relay_core.client.turn_messages import ServerMessage, TurnMessage, parse_server_message, serialize_server_message
from relay_core.errors import ProtocolError, RelayError, SessionStateError
from relay_core.speech_options import SpeechOptions
from relay_core.sse import SseDecoder, encode_sse
from relay_core.tts.client import TtsClientSession
from relay_core.tts.session import TtsServerSession
from relay_core.word_timings import WordTiming, WordTimings

__all__ = [
    "AgentCancel",
    "AgentEnd",
    "AgentErrorCode",
    "AgentEvent",
    "AgentFailed",
    "AgentPayload",
    "AgentStart",
    "AudioChunk",
    "AudioPiece",
    "AudioStreamEnd",
    "AudioStreamStart",
    "Cancel",
    "ClientErrorCode",
    "ClientEvent",
    "ClientSession",
    "Codec",
    "ProtocolError",
    "Rejection",
    "RelayError",
    "Resume",
    "SendMessage",
    "ServerMessage",
    "SessionStateError",
    "SpeechOptions",
    "SseDecoder",
    "TextDelta",
    "TtsClientSession",
    "TtsServerSession",
    "TurnAccepted",
    "TurnFramer",
    "TurnMessage",
    "TurnMode",
    "TurnOutcome",
    "TurnStatus",
    "WordTiming",
    "WordTimings",
    "encode_sse",
    "parse_client_message",
    "parse_event",
    "parse_request",
    "parse_server_message",
    "serialize_event",
    "serialize_server_message",
]
