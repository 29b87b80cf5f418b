"""relay_transport: how a client reaches a Kokoro TTS session (ARCHITECTURE §1), whatever carries it.

Two transports behind one interface (:mod:`.base`): ``ws`` (:mod:`.ws`, a plain WebSocket to the container: local,
or any host running it) and ``sagemaker`` (:mod:`.sagemaker`, SageMaker's bidirectional stream over HTTP/2). The
voice agent and the ops smoke test both use them; neither pulls in the other. Importing the package loads the
interface and the errors only: the SageMaker SDK (and its CRT) loads with :mod:`.sagemaker`, websockets with
:mod:`.ws`.
"""

from relay_transport.base import TtsConnection, TtsTransport
from relay_transport.errors import (
    TransportConfigError,
    TransportError,
    TtsConnectionClosed,
    TtsStreamError,
    TtsUnavailableError,
)

__all__ = [
    "TransportConfigError",
    "TransportError",
    "TtsConnection",
    "TtsConnectionClosed",
    "TtsStreamError",
    "TtsTransport",
    "TtsUnavailableError",
]
