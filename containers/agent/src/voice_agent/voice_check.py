"""Refuse an unknown voice before a turn streams any text.

The TTS container is the only authority on its voices, and the §1 session checks a request's voice before it
queues it. So the first time a voice is asked for, :class:`VoiceCheck` opens a short session of its own, sends one
tiny ``synthesize`` with that voice followed at once by its ``cancel`` and ``close``, and reads the answer: an
``error`` ``unknown_voice`` refuses the voice; anything else (started, cancelled, completed) accepts it. Accepted
voices are remembered (bounded), so later turns pay nothing. When the TTS cannot be reached the check passes:
the turn itself then reports ``tts_unavailable``, after the text.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict

from relay_core.errors import ProtocolError
from relay_core.speech_options import SpeechOptions
from relay_core.tts.client import RequestEnded, RequestStarted, TtsClientSession
from relay_core.tts.messages import Synthesize, TtsErrorCode, TtsFailed
from relay_transport.base import TtsTransport
from relay_transport.errors import TtsConnectionClosed, TtsStreamError, TtsUnavailableError
from voice_agent.errors import VoiceAgentError

logger = logging.getLogger(__name__)

PROBE_TEXT = "."
PROBE_REQUEST_ID = "voice-check"
REMEMBERED_VOICES = 64
CHECK_TIMEOUT_S = 5.0


class UnknownVoiceError(VoiceAgentError):
    """The TTS container has no such voice (its message says which voices it has, when it says)."""


class VoiceCheck:
    """Checks voice specs against the TTS container, remembering the ones it accepted."""

    def __init__(self, transport: TtsTransport, *, timeout_s: float = CHECK_TIMEOUT_S) -> None:
        self._transport = transport
        self._timeout_s = timeout_s
        self._known: OrderedDict[str, None] = OrderedDict()
        self.probes = 0
        """Sessions opened to check a voice (tests read it)."""

    async def check(self, voice: str | None) -> None:
        """Return if the voice is usable (or None: the container's default); raise :class:`UnknownVoiceError`."""
        if voice is None or voice in self._known:
            return
        try:
            refusal = await asyncio.wait_for(self._probe(voice), timeout=self._timeout_s)
        except (TimeoutError, TtsUnavailableError, TtsConnectionClosed, TtsStreamError, ProtocolError) as exc:
            logger.info("voice check of %r skipped: the TTS did not answer (%s)", voice, exc)
            return
        if refusal is not None:
            raise UnknownVoiceError(refusal)
        self._known[voice] = None
        while len(self._known) > REMEMBERED_VOICES:
            self._known.popitem(last=False)

    async def _probe(self, voice: str) -> str | None:
        """The container's refusal message for ``voice``, or None when it accepts it."""
        self.probes += 1
        conn = await self._transport.connect()
        try:
            client = TtsClientSession()
            await conn.send(
                client.synthesize(Synthesize(PROBE_TEXT, SpeechOptions(voice), request_id=PROBE_REQUEST_ID))
            )
            await conn.send(client.cancel(PROBE_REQUEST_ID))
            await conn.send(client.close())
            while True:
                for event in client.receive_frame(await conn.receive()):
                    if isinstance(event, RequestStarted):
                        return None
                    if isinstance(event, RequestEnded):
                        outcome = event.outcome
                        if isinstance(outcome, TtsFailed) and outcome.code == TtsErrorCode.UNKNOWN_VOICE:
                            return outcome.message
                        return None
        finally:
            await conn.aclose()


__all__ = ["UnknownVoiceError", "VoiceCheck"]
