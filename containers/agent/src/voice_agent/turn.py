"""One turn of the voice agent: model text in, §3 agent events out, speech overlapping generation.

The rules (event order, one ``seq`` per stream, exactly one terminal event, which failure wins) are
:class:`relay_core.agent.turn.AgentTurn`'s; this module is only the asyncio around it. A :class:`Turn` runs an
*engine* task whose :class:`asyncio.TaskGroup` holds three workers joined by bounded queues:

- **writer**: the model's text deltas become ``text_delta`` events at once; in ``bidi`` mode each sentence the
  segmenter completes goes into the sentence queue at once (``batch``: the whole reply when the model is done).
  It never touches the TTS session, so text keeps streaming whatever the audio side is doing (a reconnect too);
- **speaker**: hands each sentence to the TTS session (:class:`~voice_agent.tts_link.TtsLink`) as a synthesize
  request — never waiting for audio — and asks the session to finish when the reply is complete. The session
  opens while the model writes its first words (its connect does not delay the text), and sentences written
  before it is open wait for it in the sentence queue;
- **listener**: the session's audio becomes ``audio_stream_start`` / ``audio_chunk`` events as it arrives.

Events wait in a bounded queue (``TurnSettings.event_queue``) for the reader of :meth:`Turn.events`; a slow reader
slows the turn down rather than growing memory.

Guarantees:
- ``bidi``: ONE TTS session per turn, every sentence sent the moment it exists, the tail flushed when the model
  finishes, then ``close``. Faults: one reconnect (unfinished sentences resent); then the text still streams to
  the end and the turn ends with the error.
- Cancel (:meth:`Turn.cancel`: barge-in, a cancel request, a new prompt on the conversation) and a reader that
  goes away (the generator closed or its task cancelled) both stop the turn the same way: no text or audio event
  is emitted any more, the model is asked to stop and its task is cancelled after ``cancel_grace_s``, the TTS
  session gets ``cancel`` and ``close`` and is released. The engine is a task the turn holds, and the reader's
  ``finally`` waits for it: cleanup never depends on the garbage collector. :meth:`Turn.wait_ended` returns once
  all of it is done (the conversation's next turn waits for that).
- Exactly one terminal event (``agent_end`` or ``error``) ends every turn a reader reads to the end; no stack
  trace ever reaches it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from typing import Protocol

from relay_core import limits
from relay_core.agent import defaults as agent_defaults
from relay_core.agent.events import AgentEvent, TurnMode
from relay_core.agent.turn import AgentTurn
from relay_core.audio_piece import AudioChoice
from relay_core.speech_options import DEFAULT_SPEECH, SpeechOptions
from relay_core.text.segmenter import SentenceSegmenter, split_to_fit
from relay_core.word_timings import WordTiming, WordTimings, apply_word_timings, heard_prefix, interrupted
from relay_transport.base import TtsTransport
from voice_agent.opus_stream import OpusStream
from voice_agent.tts_link import LinkAudio, LinkWaiting, TtsLink, TtsLinkError

logger = logging.getLogger(__name__)


class TextSource(Protocol):
    """The reply being written: text deltas in order, and a way to stop the writer."""

    def stream(self) -> AsyncIterator[str]:
        """The reply's text deltas; ends when the model is done. May raise on a model failure."""
        ...

    def cancel(self) -> None:
        """Ask the writer to stop soon (cooperative; the turn also cancels the task after a grace period)."""
        ...


class ReplyHistory(Protocol):
    """Where the turn's reply is remembered (the conversation's history), so a barge-in can cut it."""

    def replace_reply(self, text: str) -> bool:
        """Make ``text`` the reply to this turn's prompt in the history; False if the history has moved on."""
        ...


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """What one turn is asked to do."""

    request_id: str
    prompt: str
    mode: TurnMode = TurnMode.BIDI
    options: SpeechOptions = DEFAULT_SPEECH
    """How the reply is spoken (voice None: the TTS server's default)."""
    session_id: str | None = None
    timings: bool = False
    """Emit ``word_timings`` events (the agent collects the timings anyway, for a barge-in's cut)."""
    audio: AudioChoice = AudioChoice.PCM
    """PCM, or one Opus stream for the whole turn (:class:`voice_agent.opus_stream.OpusStream`)."""


@dataclass(frozen=True, slots=True)
class TurnSettings:
    """How turns run. The defaults are :mod:`relay_core.agent.defaults` (``AgentConfig`` starts from the same)."""

    first_fragment_words: int | None = agent_defaults.FIRST_FRAGMENT_WORDS
    max_sentence_chars: int = agent_defaults.MAX_SENTENCE_CHARS
    audio_chunk_bytes: int = agent_defaults.AUDIO_CHUNK_BYTES
    cancel_grace_s: float = agent_defaults.CANCEL_GRACE_S
    tts_capacity_wait_s: float = agent_defaults.TTS_CAPACITY_WAIT_S
    """How long a turn retries an older TTS container that turns sessions away as full (1013) before
    ``tts_at_capacity`` (a current container queues the session and bounds the wait itself)."""
    model_label: str = ""
    event_queue: int = agent_defaults.TURN_EVENT_QUEUE
    sentence_queue: int = agent_defaults.TURN_SENTENCE_QUEUE


_REPLY_DONE = None
"""Sentence-queue marker: the reply is complete (or the model failed); the speaker asks the TTS to finish."""


class Turn:
    """One running turn. Read :meth:`events` once (from one task); :meth:`cancel` from anywhere on the loop."""

    def __init__(
        self,
        request: TurnRequest,
        text: TextSource,
        transport: TtsTransport,
        *,
        settings: TurnSettings,
        history: ReplyHistory | None = None,
    ):
        self.request = request
        self._history = history
        self._reply: list[str] = []
        self.words: list[WordTiming] = []
        """Word timings of the reply's speech so far, on the turn's audio timeline (what the client plays)."""
        self.played_ms: int | None = None
        """How much of the turn's audio the listener heard, when a barge-in said so."""
        self.history_cut: str | None = None
        """The reply as kept in history after a barge-in cut it (None: not cut)."""
        self.settings = settings
        self._text = text
        self._link = TtsLink(
            transport,
            request_prefix=request.request_id,
            options=request.options,
            capacity_wait_s=settings.tts_capacity_wait_s,
        )
        self.machine = AgentTurn(
            request_id=request.request_id,
            session_id=request.session_id,
            mode=request.mode,
            model=settings.model_label,
            audio_chunk_bytes=settings.audio_chunk_bytes,
            encoder=OpusStream() if request.audio is AudioChoice.OPUS else None,
        )
        self._events: asyncio.Queue[AgentEvent] = asyncio.Queue(maxsize=settings.event_queue)
        self._sentences: asyncio.Queue[str | None] = asyncio.Queue(maxsize=settings.sentence_queue)
        self._cancel = asyncio.Event()
        self._ended = asyncio.Event()
        self._engine: asyncio.Task[None] | None = None
        self._on_ended: list[Callable[[Turn], None]] = []

    @property
    def request_id(self) -> str:
        return self.request.request_id

    @property
    def link(self) -> TtsLink:
        return self._link

    def cancel(self) -> None:
        """Stop the turn (idempotent): it ends ``cancelled`` with no more text or audio."""
        self.machine.cancel()
        self._cancel.set()
        if self._engine is None:  # never started: nothing to stop
            self._mark_ended()

    def barge_in(self, played_ms: int) -> None:
        """The listener interrupted after hearing ``played_ms`` of the turn's audio: cancel the turn (if it still
        runs) and, once it has stopped, keep in history only the words heard, marked as interrupted. On a turn
        that has already ended the history is cut at once."""
        self.played_ms = played_ms
        if self._ended.is_set():
            self._cut_history()
        else:
            self.cancel()

    @property
    def reply(self) -> str:
        """The reply's text written so far."""
        return "".join(self._reply)

    def _cut_history(self) -> None:
        """Apply a barge-in's cut: the heard prefix of the reply, marked interrupted, replaces the reply."""
        played_ms = self.played_ms
        if played_ms is None or self._history is None:
            return
        if not self.words:
            logger.info(
                "turn %s: barge-in at %d ms, but no word timings arrived: history kept", self.request_id, played_ms
            )
            return
        reply = self.reply
        heard = heard_prefix(reply, self.words, played_ms / 1000)
        if heard.strip() == reply.strip():
            return
        kept = interrupted(heard)
        if self._history.replace_reply(kept):
            self.history_cut = kept
            logger.info(
                "turn %s: barge-in at %d ms; history keeps %d of %d characters",
                self.request_id,
                played_ms,
                len(heard),
                len(reply),
            )

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def on_ended(self, callback: Callable[[Turn], None]) -> None:
        """Call ``callback(turn)`` once the turn's work has stopped (at once if it already has)."""
        if self._ended.is_set():
            callback(self)
        else:
            self._on_ended.append(callback)

    async def wait_ended(self) -> None:
        """Until the model has stopped and the TTS session is released."""
        await self._ended.wait()

    async def events(self) -> AsyncGenerator[AgentEvent]:
        """The turn's events. Closing this generator early (or cancelling its reader) cancels the turn, and the
        ``finally`` waits until the turn's work has stopped."""
        try:
            yield self.machine.start()
            if not self._ended.is_set():  # not cancelled before it started
                self._engine = asyncio.create_task(self._run_engine(), name=f"turn-{self.request_id}")
                while (event := await self._next()) is not None:
                    yield event
                await self._wait_engine()
            for event in self.machine.finish():
                yield event
        finally:
            if not self._ended.is_set():
                self.cancel()
                await self._wait_engine()

    # --- reader side --------------------------------------------------------------------------------------

    async def _next(self) -> AgentEvent | None:
        """The next queued event; None once the turn is cancelled, or its engine ended and the queue is empty."""
        while not self._cancel.is_set():
            if not self._events.empty():
                return self._events.get_nowait()
            if self._ended.is_set():
                return None
            get = asyncio.create_task(self._events.get())
            waits = {get, asyncio.create_task(self._cancel.wait()), asyncio.create_task(self._ended.wait())}
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for wait in waits:
                    wait.cancel()
            if get.done() and not get.cancelled() and not self._cancel.is_set():
                return get.result()
            if get.done() and not get.cancelled():  # taken just as the turn was cancelled: dropped, as all audio is
                return None
        return None

    async def _wait_engine(self) -> None:
        """Wait for the engine even if this task is cancelled meanwhile (the engine then finishes on its own)."""
        engine = self._engine
        if engine is not None:
            await asyncio.shield(engine)

    # --- engine -------------------------------------------------------------------------------------------

    async def _run_engine(self) -> None:
        try:
            async with asyncio.TaskGroup() as group:
                # The TTS session opens while the model starts writing: its connect (a TLS handshake on SageMaker)
                # overlaps the first tokens instead of preceding them.
                opening = group.create_task(self._open_tts(), name="turn-tts-open")
                writer = group.create_task(self._write(), name="turn-writer")
                speaker = group.create_task(self._speak(opening), name="turn-speaker")
                listener = group.create_task(self._listen(opening), name="turn-listener")
                workers = {opening, writer, speaker, listener}
                cancelled = group.create_task(self._cancel.wait())
                running = set(workers)
                while running and not cancelled.done():
                    # Only the tasks still running: a finished one in the set would wake this at once, for ever
                    # (a busy loop on the agent's event loop for the rest of the turn, taking CPU from the speech).
                    done, _ = await asyncio.wait({*running, cancelled}, return_when=asyncio.FIRST_COMPLETED)
                    running -= done
                if cancelled.done():
                    await self._stop(writer=writer, others=[opening, speaker, listener])
                else:
                    cancelled.cancel()
        except* asyncio.CancelledError:
            # The engine itself was cancelled (its event loop is closing, e.g. the process stops): its tasks end
            # here, but a model SDK that reads on a thread of its own (Strands' Bedrock stream) would go on
            # generating the whole reply unless it is told to stop.
            self._text.cancel()
            raise
        except* Exception as group_error:  # a bug in a worker (they report expected failures themselves)
            logger.error("turn %s: internal error", self.request_id, exc_info=group_error)
            if not self.machine.ended:
                self.machine.internal_failed("the agent hit an internal error; the details are in its log")
        finally:
            try:
                await self._link.aclose()
            finally:
                self._cut_history()
                self._mark_ended()

    async def _open_tts(self) -> None:
        try:
            await self._link.open()
        except TtsLinkError as exc:
            logger.warning("turn %s: %s", self.request_id, exc.message)
            self.machine.tts_failed(exc.code, exc.message)

    async def _stop(self, *, writer: asyncio.Task[None], others: list[asyncio.Task[None]]) -> None:
        """Cancel: the model is asked to stop, the audio side stops at once, the TTS session gets cancel + close;
        the model's task is cancelled outright if it has not stopped within the grace period."""
        self.machine.cancel()
        self._text.cancel()
        for task in others:
            task.cancel()
        await asyncio.wait(others)
        grace = self.settings.cancel_grace_s
        try:
            await asyncio.wait_for(self._link.cancel(), timeout=grace)
        except TimeoutError:
            logger.warning("turn %s: the TTS session did not take the cancel within %.1f s", self.request_id, grace)
        if not writer.done():
            await asyncio.wait({writer}, timeout=grace)
            writer.cancel()

    async def _emit(self, events: list[AgentEvent]) -> None:
        for event in events:
            await self._events.put(event)

    async def _write(self) -> None:
        """The model's reply: text deltas out at once, sentences into the sentence queue at once (bidi)."""
        segmenter = SentenceSegmenter(
            max_chars=self.settings.max_sentence_chars, first_fragment_words=self.settings.first_fragment_words
        )
        bidi = self.request.mode is TurnMode.BIDI
        try:
            async for delta in self._text.stream():
                await self._emit(list(self.machine.text(delta)))
                if not delta:
                    continue
                self._reply.append(delta)
                if bidi:
                    for sentence in segmenter.feed(delta):
                        await self._sentences.put(sentence)
            if bidi:
                pieces = segmenter.flush()
            else:
                # The batch baseline sends the reply in one request; only a reply over the per-request limit is split.
                pieces = split_to_fit(self.reply, lambda piece: len(piece) <= limits.MAX_TEXT_CHARS)
            for piece in pieces:
                await self._sentences.put(piece)
        except Exception as exc:  # a model failure (any SDK's) becomes the turn's one terminal error event
            logger.warning("turn %s: the model failed", self.request_id, exc_info=exc)
            detail = str(exc).splitlines()[0][:200] if str(exc) else ""
            self.machine.model_failed(f"the model failed ({type(exc).__name__}{': ' + detail if detail else ''})")
        # The reply is complete (or the model failed): the TTS finishes what it has.
        await self._sentences.put(_REPLY_DONE)

    async def _speak(self, opening: asyncio.Task[None]) -> None:
        """Hand each sentence to the TTS session as soon as it is written (and the session is open); never waits
        for audio. Sentences written while the session opens wait in the sentence queue."""
        await opening
        while True:
            sentence = await self._sentences.get()
            if sentence is _REPLY_DONE:
                await self._link.finish()
                return
            self.machine.sentence_sent()
            await self._link.speak(sentence)

    async def _listen(self, opening: asyncio.Task[None]) -> None:
        """The TTS session's audio, as events, as it arrives (nothing when the session could not be opened)."""
        await opening
        if not self._link.is_open:
            return
        try:
            async for event in self._link.events():
                if isinstance(event, LinkAudio):
                    await self._emit(list(self.machine.audio(event.pcm, event.voice)))
                elif isinstance(event, LinkWaiting):
                    await self._emit(list(self.machine.speech_waiting(event.position)))
                elif isinstance(event, WordTimings):
                    apply_word_timings(self.words, event)
                    if self.request.timings and not self.cancelled:
                        await self._emit([event.shifted(0.0, request_id=self.request_id)])
                else:
                    self.machine.request_failed(event.code, event.message)
        except TtsLinkError as exc:
            logger.warning("turn %s: %s", self.request_id, exc.message)
            self.machine.tts_failed(exc.code, exc.message)

    def _mark_ended(self) -> None:
        if self._ended.is_set():
            return
        self._ended.set()
        callbacks, self._on_ended = self._on_ended, []
        for callback in callbacks:
            callback(self)


async def run_turn(
    request: TurnRequest,
    text: TextSource,
    transport: TtsTransport,
    *,
    settings: TurnSettings,
    cancel: asyncio.Event | None = None,
) -> AsyncGenerator[AgentEvent]:
    """The events of one turn; setting ``cancel`` cancels it (see the module docstring for the guarantees)."""
    turn = Turn(request, text, transport, settings=settings)
    watcher = None if cancel is None else asyncio.create_task(_cancel_when_set(cancel, turn))
    try:
        async with contextlib.aclosing(turn.events()) as events:
            async for event in events:
                yield event
    finally:
        if watcher is not None:
            watcher.cancel()


async def _cancel_when_set(event: asyncio.Event, turn: Turn) -> None:
    await event.wait()
    turn.cancel()


__all__ = ["ReplyHistory", "TextSource", "Turn", "TurnRequest", "TurnSettings", "run_turn"]
