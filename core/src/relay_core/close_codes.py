"""The WebSocket close codes the project sends and reads (RFC 6455 §7.4 and IANA's registry), each named once.

Every part that closes a WebSocket or reads why one closed imports them from here: the TTS container (a full
instance), its session machine and clients, the transports, the local API Gateway and SageMaker front end, the ops
smoke test. A code's meaning on a given wire is that wire's document's (docs/protocol.md, docs/client-protocol.md).
"""

from __future__ import annotations

from typing import Final

NORMAL_CLOSURE: Final = 1000
"""The session is done: its queue is drained (the TTS session), or the stream ended as asked."""
GOING_AWAY: Final = 1001
"""The endpoint is going away: a server stopping, or API Gateway's idle and age limits (the local gateway)."""
MESSAGE_TOO_BIG: Final = 1009
"""A message over the receiver's size quota: API Gateway (and the local one) closes a client's connection with it on
a frame over ``limits.APIGW_FRAME_BYTES`` or a message over ``limits.APIGW_MESSAGE_BYTES``. A client ends the turn
whose ``sendMessage`` it was (``ClientSession.closed_too_big``) instead of sending it again after reconnecting."""
TRY_AGAIN_LATER: Final = 1013
"""The service is full, or not ready yet: a TTS container whose sessions are all taken (its admission limit)
closes a new session with it right after the handshake. No failure: the caller retries or goes elsewhere."""

__all__ = ["GOING_AWAY", "MESSAGE_TOO_BIG", "NORMAL_CLOSURE", "TRY_AGAIN_LATER"]
