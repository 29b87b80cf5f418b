"""One turn's TTS session, with the agent's recovery rule: at most one reconnect per turn.

:class:`TtsLink` wraps a :class:`~relay_transport.base.TtsConnection` and the sans-I/O
:class:`relay_core.tts.client.TtsClientSession`. The turn calls :meth:`TtsLink.speak` for each sentence the
moment it exists (it never waits for audio), :meth:`TtsLink.finish` when the reply is complete, and reads
:meth:`TtsLink.events` concurrently. The link remembers every sentence whose request has not ended; when
the session is refused or drops before all of them ended, it opens a new session ONCE and sends those
sentences again, in order (a sentence cut off mid-audio is spoken again from its start). A second failure
raises :class:`TtsLinkError`.

A session the service cannot serve yet waits in the service's own queue, told in-band (any transport passes it
through as payload): the session's ``queued`` becomes :class:`LinkWaiting` (the turn's "voice starting…"), with
no reconnect and no backoff: the sentences already sent are kept by the service and run once it admits the session.
If the service's bound on that wait passes, its ``at_capacity`` raises :class:`TtsLinkError` ``tts_at_capacity``.

An older container closes a session as full instead (``busy``: WebSocket 1013, try again later); that is no
failure either and costs no reconnect: the link backs off with full jitter
(:data:`relay_core.agent.defaults.TTS_CAPACITY_BACKOFF_S`) and opens a new session, again and again, for at most
``capacity_wait_s`` from the first refusal, holding no lock while it waits, so :meth:`TtsLink.speak` never blocks
and the turn's text keeps flowing. Only then does it raise :class:`TtsLinkError` with ``tts_at_capacity``. Any frame
from a session ends the wait (the next refusal starts a new one).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import NoReturn

from relay_core import limits
from relay_core.agent import defaults as agent_defaults
from relay_core.agent.events import AgentErrorCode, AgentFailed
from relay_core.errors import ProtocolError
from relay_core.speech_options import SpeechOptions
from relay_core.tts.client import (
    AudioReceived,
    FrameRefused,
    RequestEnded,
    RequestStarted,
    SessionAtCapacity,
    SessionStarted,
    SessionWaiting,
    TimingsReceived,
    TtsClientSession,
)
from relay_core.tts.messages import Synthesize, TtsFailed
from relay_core.word_timings import WordTimings
from relay_transport.base import TtsConnection, TtsTransport
from relay_transport.errors import TtsConnectionClosed, TtsStreamError, TtsUnavailableError
from voice_agent.errors import VoiceAgentError

logger = logging.getLogger(__name__)


class TtsLinkError(VoiceAgentError):
    """The TTS session failed and the one reconnect did not save it."""

    def __init__(self, code: AgentErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class LinkAudio:
    """PCM (s16le, whole samples) of one sentence request, and the voice the server speaks it with."""

    request_id: str
    pcm: bytes
    voice: str


@dataclass(frozen=True, slots=True)
class LinkWaiting:
    """The session waits in the TTS service's admission queue (``position``: its place when it joined, 1: next)."""

    position: int


LinkEvent = LinkAudio | AgentFailed | WordTimings | LinkWaiting
"""What :meth:`TtsLink.events` yields: the session waiting for a slot of the busy service; a request's audio; a
request the server failed (an agent ``error`` naming the sentence request, its code and message the server's; the
session goes on); word timings of one segment of a request, moved onto the link's audio timeline (every sample the
link has delivered, in order: the turn's audio), so that they match what a client plays, with any ``index`` moved
onto the turn's words likewise."""


class TtsLink:
    """The TTS side of one turn. Use from one event loop: one task calls speak/finish/cancel, another reads
    :meth:`events`."""

    def __init__(
        self,
        transport: TtsTransport,
        *,
        request_prefix: str,
        options: SpeechOptions,
        max_reconnects: int = 1,
        capacity_wait_s: float = agent_defaults.TTS_CAPACITY_WAIT_S,
        backoff_s: tuple[float, float] = agent_defaults.TTS_CAPACITY_BACKOFF_S,
    ) -> None:
        self._transport = transport
        self._prefix = request_prefix
        self._options = options
        """How every sentence request is spoken."""
        self._speaking_voice = options.voice or ""
        """The voice the server announced for the request being spoken (its default when none was asked)."""
        self._reconnects_left = max_reconnects
        self._conn: TtsConnection | None = None
        self._client = TtsClientSession()
        self._unfinished: dict[str, str] = {}  # request id -> text, in send order, until its request ends
        self._count = 0
        self._finishing = False
        self._cancelled = False
        self._lock = asyncio.Lock()
        self._failure: TtsLinkError | None = None
        self.sessions_opened = 0
        """TTS sessions this link opened (1 normally, 2 after a reconnect)."""
        self._samples = 0
        """Samples of audio delivered so far: where the next sample sits on the turn's audio timeline."""
        self._request_start: dict[str, int] = {}
        """Where each request's audio starts on the turn's timeline (set when the server starts it)."""
        self._words_held = 0
        """Words of the turn a consumer holds after applying every timing yielded so far (``apply_word_timings``)."""
        self._request_words: dict[str, int] = {}
        """How many of the turn's words come before each request's (set when the server starts it)."""
        self._capacity_wait_s = capacity_wait_s
        self._backoff_s = backoff_s
        self._busy_since: float | None = None
        """Loop time of the first refusal (1013) of the current wait for capacity; None: not waiting."""
        self._busy_tries = 0
        self.capacity_refusals = 0
        """Sessions the service closed as full (1013) during this link's life (logs and tests)."""

    @property
    def is_open(self) -> bool:
        """Whether a session is open now (False before :meth:`open`, after a failure, and after :meth:`aclose`)."""
        return self._conn is not None

    @property
    def sentences_sent(self) -> int:
        return self._count

    async def open(self) -> None:
        """Open the session (with the one retry when refused). Raises :class:`TtsLinkError`."""
        async with self._lock:
            try:
                await self._connect()
            except TtsUnavailableError as exc:
                logger.warning("TTS session refused: %s", exc.message)
                await self._recover(reason=exc.message)

    async def speak(self, text: str) -> None:
        """Queue ``text`` as the next synthesize request; returns as soon as it is sent (never waits for audio).

        If the session has dropped, the sentence is kept and sent on the reconnect; after a failed reconnect
        it is dropped silently (the reader has already raised :class:`TtsLinkError`)."""
        self._count += 1
        request_id = f"{self._prefix}-{self._count}"
        async with self._lock:
            # Recorded under the lock, so a reconnect in progress either resends it or it is sent below: never both.
            self._unfinished[request_id] = text
            conn = self._conn
            if conn is None or self._cancelled:
                return
            frame = self._client.synthesize(self._request(request_id, text))
            await self._send_or_note_drop(conn, frame)

    async def finish(self) -> None:
        """No more sentences: ask the server to finish the queue and close the session."""
        self._finishing = True
        async with self._lock:
            if self._conn is not None and self._failure is None:
                await self._send_or_note_drop(self._conn, self._client.close())

    async def cancel(self) -> None:
        """Barge-in: drop queued sentences and stop the running one (best effort; the link is abandoned)."""
        self._cancelled = True
        async with self._lock:
            conn = self._conn
            if conn is None:
                return
            await self._send_or_note_drop(conn, self._client.cancel(None))
            await self._send_or_note_drop(conn, self._client.close())

    async def aclose(self) -> None:
        """Release the session (idempotent)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.aclose()

    async def events(self) -> AsyncIterator[LinkEvent]:
        """Audio and per-request failures, in order, until the server has ended every request and closed
        after :meth:`finish`. Raises :class:`TtsLinkError` when the session cannot be kept alive."""
        while True:
            conn = self._conn
            if conn is None:
                if self._failure is not None:
                    raise self._failure
                return
            try:
                frame = await conn.receive()
            except TtsConnectionClosed as exc:
                if exc.clean and self._finishing and not self._unfinished:
                    return
                if self._cancelled:
                    return
                if exc.busy:
                    await self._wait_for_capacity(conn, exc.message)
                    continue
                logger.warning("TTS session lost with %d sentence(s) unfinished: %s", len(self._unfinished), exc)
                async with self._lock:
                    if self._conn is conn:
                        await self._recover(reason=exc.message)
                continue
            except TtsStreamError as exc:
                logger.warning("TTS stream error: %s", exc)
                async with self._lock:
                    if self._conn is conn:
                        await self._recover(reason=f"the TTS stream reported {exc.code}: {exc.detail}")
                continue
            try:
                client_events = self._client.receive_frame(frame)
            except ProtocolError as exc:
                raise TtsLinkError(
                    AgentErrorCode.TTS_FAILED, f"the TTS server broke the session protocol: {exc.message}"
                ) from exc
            self._busy_since, self._busy_tries = None, 0  # a session that speaks: the service had room
            for event in client_events:
                if isinstance(event, SessionWaiting):
                    logger.info("TTS service busy: session queued at position %d", event.message.position)
                    yield LinkWaiting(position=event.message.position)
                elif isinstance(event, SessionStarted):
                    logger.info("TTS session admitted after %.2f s in the queue", event.message.waited_s)
                elif isinstance(event, SessionAtCapacity):
                    self._fail_at_capacity(
                        f"kept this turn's speech in its queue for its whole wait ({event.error.message})"
                    )
                if isinstance(event, TimingsReceived):
                    yield self._on_turn_timeline(event.timings)
                if isinstance(event, AudioReceived):
                    self._samples += event.piece.samples
                    yield LinkAudio(request_id=event.request_id, pcm=event.pcm, voice=self._speaking_voice)
                elif isinstance(event, RequestEnded):
                    self._unfinished.pop(event.request_id, None)
                    outcome = event.outcome
                    if isinstance(outcome, TtsFailed):
                        yield AgentFailed(request_id=event.request_id, code=outcome.code, message=outcome.message)
                elif isinstance(event, FrameRefused):
                    logger.warning("TTS session error: %s %s", event.error.code, event.error.message)
                elif isinstance(event, RequestStarted):
                    self._speaking_voice = event.message.options.voice or ""
                    self._request_start[event.message.request_id] = self._samples
                    self._request_words[event.message.request_id] = self._words_held

    def _on_turn_timeline(self, timings: WordTimings) -> WordTimings:
        """A request's timings moved onto the turn's audio timeline and its words."""
        rid = timings.request_id
        start = self._request_start.get(rid, self._samples)
        shifted = timings.shifted(
            start / limits.SAMPLE_RATE, words_before=self._request_words.get(rid, self._words_held)
        )
        if shifted.index is None:
            self._words_held += len(shifted.words)
        else:
            self._words_held = min(self._words_held, shifted.index) + len(shifted.words)
        return shifted

    # -- internals (call with self._lock held) -----------------------------------------------------------

    def _request(self, request_id: str, text: str) -> Synthesize:
        # Word timings always: the turn needs them to cut its history at a barge-in (cheap; a container that does
        # not know the field ignores it, and the cut is then skipped).
        return Synthesize(text=text, options=self._options, request_id=request_id, timings=True)

    async def _connect(self) -> None:
        self._conn = await self._transport.connect()
        self._client = TtsClientSession()
        self.sessions_opened += 1

    async def _send_or_note_drop(self, conn: TtsConnection, frame: str) -> None:
        try:
            await conn.send(frame)
        except TtsConnectionClosed as exc:
            # The reader sees the same drop on its next receive and recovers; nothing is lost meanwhile
            # because the sentence stays in self._unfinished.
            logger.debug("TTS send after drop: %s", exc.message)

    async def _wait_for_capacity(self, conn: TtsConnection, reason: str) -> None:
        """The service closed ``conn`` as full: back off (full jitter), open a new session and resend every
        unfinished sentence; repeat on each refusal until ``capacity_wait_s`` has passed since the first one, then
        raise ``tts_at_capacity``. Sleeps without the lock: :meth:`speak` goes on queueing sentences meanwhile."""
        loop = asyncio.get_running_loop()
        async with self._lock:
            if self._conn is not conn:
                return
            self._conn = None
            await conn.aclose()
        self.capacity_refusals += 1
        if self._busy_since is None:
            self._busy_since = loop.time()
        waited = loop.time() - self._busy_since
        if waited >= self._capacity_wait_s:
            self._fail_at_capacity(f"turned every session away as full for {self._capacity_wait_s:g} s ({reason})")
        base, cap = self._backoff_s
        delay = random.uniform(0.0, min(cap, base * 2**self._busy_tries))  # jitter, not security
        self._busy_tries += 1
        logger.info("TTS at capacity (%s); trying a new session in %.2f s", reason, delay)
        await asyncio.sleep(min(delay, self._capacity_wait_s - waited))
        async with self._lock:
            if self._cancelled:
                return
            try:
                await self._connect()
            except TtsUnavailableError as exc:
                self._fail(f"{reason}; opening a new session failed: {exc.message}")
            reopened = self._conn
            assert reopened is not None
            for request_id, text in self._unfinished.items():
                await self._send_or_note_drop(reopened, self._client.synthesize(self._request(request_id, text)))
            if self._finishing:
                await self._send_or_note_drop(reopened, self._client.close())

    def _fail_at_capacity(self, how: str) -> NoReturn:
        """End the speech ``tts_at_capacity``; ``how`` says what the TTS service did (turned away, or kept queued)."""
        self._failure = TtsLinkError(
            AgentErrorCode.TTS_AT_CAPACITY,
            f"speech is at capacity: the TTS service {how}; the text is complete: try again in a little while",
        )
        raise self._failure

    async def _recover(self, *, reason: str) -> None:
        """Reconnect once and resend every unfinished sentence; else record and raise the failure."""
        old, self._conn = self._conn, None
        if old is not None:
            await old.aclose()
        if self._reconnects_left <= 0:
            self._fail(reason)
        self._reconnects_left -= 1
        try:
            await self._connect()
        except TtsUnavailableError as exc:
            self._fail(f"{reason}; the reconnect failed too: {exc.message}")
        conn = self._conn
        assert conn is not None
        logger.info("TTS session reopened; resending %d sentence(s)", len(self._unfinished))
        try:
            for request_id, text in self._unfinished.items():
                await conn.send(self._client.synthesize(self._request(request_id, text)))
            if self._finishing:
                await conn.send(self._client.close())
        except TtsConnectionClosed as exc:
            self._conn = None
            await conn.aclose()
            self._fail(f"{reason}; the reopened session dropped too: {exc.message}")

    def _fail(self, reason: str) -> NoReturn:
        code = AgentErrorCode.TTS_UNAVAILABLE if self.sessions_opened == 0 else AgentErrorCode.TTS_FAILED
        self._failure = TtsLinkError(code, f"text-to-speech failed: {reason}")
        raise self._failure


__all__ = ["LinkAudio", "LinkEvent", "LinkWaiting", "TtsLink", "TtsLinkError"]
