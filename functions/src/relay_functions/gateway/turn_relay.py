"""The turn relay: one agent turn, from AgentCore's SSE stream to the client's WebSocket, as a plain object.

:class:`TurnRelay` (no AWS in it: the turns/connections stores, the poster and the agent are injected) does:

0. It takes the turn record (a conditional write): a repeated asynchronous invocation of the same turn does
   nothing (outcome ``duplicate``).
1. ``open_turn`` on the agent (``invoke_agent_runtime``); a failure ends the turn with ``agent_unavailable``.
2. A reader thread takes the body as it arrives; the relay decodes it with :class:`relay_core.sse.SseDecoder`
   (any chunking), joins text deltas that come within :data:`relay_core.limits.TEXT_COALESCE_WINDOW_S` of the
   last text sent (:class:`relay_core.text_coalescing.TextCoalescer`: a few text messages a second instead of one
   per token; audio is never held), frames every event with :class:`relay_core.client_framing.TurnFramer`
   (numbered, each under the frame budget), keeps it in a :class:`relay_core.resume_buffer.ResumeBuffer`, and
   posts it.
3. Every :data:`POLL_INTERVAL_S` a watcher thread reads the turn record (one consistent GetItem) and queues the
   read behind the agent's chunks; the relay thread acts on it in order, so a slow read never holds up a post
   (and the first agent call waits for no poll):
   - ``cancel_requested`` → the agent's cancel request on the same session, with the client's ``played_ms`` if
     the cancel carried one (the agent then keeps only the words heard; a flag with ``played_ms`` seen only after
     the turn's end still reaches the agent, which then cuts its latest turn); the agent then ends its stream
     with ``agent_end`` status ``cancelled``, which the client gets like any message. Latency from the
     ``cancel`` route's write to the agent's cancel request: at most POLL_INTERVAL_S + one GetItem.
     If the agent has not ended the turn :data:`CANCEL_GRACE_S` later, the relay ends it itself.
   - ``resume_count`` moved → the client resumed on a new connection: post ``turn_accepted`` and replay the
     buffer after ``resume_after_seq`` to it, then continue live there (nothing lost, nothing repeated: the relay is the
     only sender and replays before it sends anything newer).
   - ``detached_at`` set (``$disconnect``) → stop posting, keep buffering.
4. ``GoneException`` on a post → detached too (and recorded). A turn detached for longer than the resume window
   is abandoned: the agent's turn is cancelled and the stream closed, so no speech is synthesized for nobody.
5. Before the terminal message (``agent_end`` or ``error`` with ``seq``) is posted, live or in a replay, the turn
   record is marked ``ended`` and the connection's claim on the turn released: a client that sends its next
   ``sendMessage`` the moment the terminal arrives finds the connection free (never ``turn_in_progress``), and a
   ``cancel`` with ``played_ms`` it sends then goes to the agent directly (the late barge-in).
6. After the terminal message: if the client is detached, the relay lingers up to the resume window for a
   resume (then replays); finally it closes the turn record (state ``closed``: no resume after that) with a
   conditional write that fails if a resume slipped in, in which case it serves that resume first.

A post that still fails after the poster's retries (throttling, an unreachable endpoint) is logged and
skipped: the message stays in the buffer, and the client, seeing the seq gap, can ``resume`` on the same
connection to fill it. When the lost message was among the last (no later message shows the client a gap), the
client hears nothing more on an open socket: after :data:`relay_core.client_session.STALL_RESUME_S` of
silence it sends ``resume`` on the same connection, so a relay with undelivered messages lingers for the
resume window after the turn's end, as for a detached client.
"""

from __future__ import annotations

import contextvars
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from botocore.exceptions import BotoCoreError, ClientError

from relay_core import limits
from relay_core.agent_events import AgentEnd, AgentEvent, AudioChunk, TurnStatus, parse_event
from relay_core.client_framing import TurnFramer
from relay_core.client_messages import ClientErrorCode, GatewayError, TurnAccepted, serialize
from relay_core.errors import InvalidFieldError, ProtocolError, RelayError, ResumeExpiredError
from relay_core.resume_buffer import ResumeBuffer
from relay_core.sse import SseDecoder, SseEvent
from relay_core.text_coalescing import TextCoalescer
from relay_functions.gateway.agent_runtime import AgentRuntime, AgentUnavailableError, TurnStream
from relay_functions.gateway.clock import SYSTEM_CLOCK, Clock
from relay_functions.gateway.connections import ConnectionStore
from relay_functions.gateway.observability import logger
from relay_functions.gateway.posting import ConnectionPoster, PostFailedError
from relay_functions.gateway.relay_request import RelayRequest
from relay_functions.gateway.turns import Turn, TurnOutcome, TurnStore

POLL_INTERVAL_S = 0.2
"""How often the relay reads the turn record (cancel, resume, disconnect): bounds their latency."""
CANCEL_GRACE_S = 5.0
"""After its cancel request, how long the agent has to end the turn before the relay ends it itself."""
AGENT_STREAM_BROKEN = "the agent's stream ended before the turn did: send the message again"
AGENT_UNREACHABLE = "the agent could not be reached: try again in a moment"


@dataclass
class RelayResult:
    """What happened, for logs and metrics."""

    outcome: TurnOutcome = TurnOutcome.COMPLETED
    messages: int = 0
    """Messages framed (the turn's last seq + 1)."""
    posted: int = 0
    failed_posts: int = 0
    replays: int = 0
    replayed_messages: int = 0
    time_to_first_audio_s: float | None = None
    """From the relay's start to the first audio message posted."""
    cancel_latency_s: float | None = None
    """From the relay seeing the cancel flag to the terminal message."""
    error_codes: list[str] = field(default_factory=list)


_END = object()


class _Reader:
    """Reads a turn's body on a daemon thread so the relay can poll the turn record while the agent is silent."""

    def __init__(self, stream: TurnStream) -> None:
        self.stream = stream
        self.items: queue.Queue[object] = queue.Queue()
        context = contextvars.copy_context()  # the invocation's log keys
        self._thread = threading.Thread(target=context.run, args=(self._run,), name="agent-stream-reader", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for chunk in self.stream.chunks():
                self.items.put(chunk)
        except Exception as exc:  # noqa: BLE001 - handed to the relay thread, which ends the turn with it
            self.items.put(exc)
        self.items.put(_END)

    def get(self, timeout_s: float) -> object | None:
        try:
            return self.items.get(timeout=max(0.0, timeout_s))
        except queue.Empty:
            return None

    def close(self) -> None:
        try:
            self.stream.close()
        except Exception:  # noqa: BLE001 - closing a broken body must not mask why we close it
            logger.warning("closing the agent stream failed", exc_info=True)


@dataclass(frozen=True)
class _TurnRead:
    """One read of the turn record (None: it is gone), queued for the relay thread by :class:`_TurnWatcher`."""

    turn: Turn | None


class _TurnWatcher:
    """Reads the turn record every ``poll_s`` on a daemon thread and queues each read with the agent's chunks, so
    the relay thread applies it in order but never waits for DynamoDB between two posts."""

    def __init__(self, read: Callable[[], Turn | None], items: queue.Queue[object], poll_s: float) -> None:
        self._read = read
        self._items = items
        self._poll_s = poll_s
        self._stop = threading.Event()
        context = contextvars.copy_context()
        self._thread = threading.Thread(target=context.run, args=(self._run,), name="turn-watcher", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._poll_s):
            try:
                turn = self._read()
            except (ClientError, BotoCoreError) as exc:
                logger.warning("reading the turn record failed; trying again at the next poll: %s", type(exc).__name__)
                continue
            self._items.put(_TurnRead(turn))

    def stop(self) -> None:
        self._stop.set()


class TurnRelay:
    """Relays one turn. Call :meth:`run` once."""

    def __init__(
        self,
        request: RelayRequest,
        *,
        turns: TurnStore,
        connections: ConnectionStore,
        poster: ConnectionPoster,
        agent: AgentRuntime,
        resume_window_s: float,
        clock: Clock = SYSTEM_CLOCK,
        poll_interval_s: float = POLL_INTERVAL_S,
        cancel_grace_s: float = CANCEL_GRACE_S,
        buffer: ResumeBuffer | None = None,
        sleep: Callable[[float], None] = time.sleep,
        text_window_s: float = limits.TEXT_COALESCE_WINDOW_S,
    ) -> None:
        self.request = request
        self._turns = turns
        self._connections = connections
        self._poster = poster
        self._agent = agent
        self._window_s = resume_window_s
        self._clock = clock
        self._poll_s = poll_interval_s
        self._grace_s = cancel_grace_s
        self._sleep = sleep
        self.framer = TurnFramer(request.turn_id)
        self.buffer = buffer if buffer is not None else ResumeBuffer()
        self.connection_id = request.connection_id
        self.detached_since: float | None = None
        self._seen_resumes = 0
        self._undelivered = False
        """A post failed since the last replay: the client lacks a message (and may not know it yet)."""
        self._posted_through = -1
        """Every message up to this seq was posted to the current connection (contiguously, without a failure)."""
        self._cancel_sent_at: float | None = None
        self._ended = False
        """The record says ``ended`` (written once, before the terminal message is first posted)."""
        self._started = clock.monotonic()
        self._decoder = SseDecoder()
        self._text = TextCoalescer(text_window_s)
        self.result = RelayResult()

    # --- the run ------------------------------------------------------------------------------------------

    def run(self) -> RelayResult:
        """Relay the turn to its end (or until it is abandoned); the record is closed whatever happens. A turn
        that another relay already took is left alone (outcome ``duplicate``)."""
        if not self._turns.claim_relay(self.request.turn_id):
            logger.warning("the turn was already taken by a relay (a repeated invocation): nothing to do")
            self.result.outcome = TurnOutcome.DUPLICATE
            return self.result
        try:
            self._stream_turn()
            self._linger_for_resume()
        except Exception:  # noqa: BLE001 - logged with its stack; the client gets internal_error, the agent a cancel
            logger.exception("the relay failed")
            if not self.framer.finished:
                self._send_cancel()
                self._fail(ClientErrorCode.INTERNAL, "the gateway lost this turn: send the message again")
        finally:
            self._close()
        self.result.messages = self.framer.next_seq
        return self.result

    def _stream_turn(self) -> None:
        request = self.request
        try:
            stream = self._agent.open_turn(session_id=request.session_id, payload=request.agent)
        except AgentUnavailableError as exc:
            logger.error("the agent could not be invoked: %s", exc)
            self._fail(ClientErrorCode.AGENT_UNAVAILABLE, AGENT_UNREACHABLE)
            return
        reader = _Reader(stream)
        watcher = _TurnWatcher(lambda: self._turns.get(request.turn_id), reader.items, self._poll_s)
        try:
            self._pump(reader)
        finally:
            watcher.stop()
            reader.close()

    def _pump(self, reader: _Reader) -> None:
        while not self.framer.finished:
            item = reader.get(self._wait_s())
            if isinstance(item, _TurnRead):
                self._apply(item.turn)
            elif isinstance(item, bytes):
                self._feed(self._decoder.feed(item))
            elif item is _END:
                self._feed(self._decoder.close())
                if not self.framer.finished:
                    logger.error("the agent's stream ended without a terminal event")
                    self._fail(ClientErrorCode.AGENT_UNAVAILABLE, AGENT_STREAM_BROKEN)
                return
            elif isinstance(item, BaseException):
                logger.error("reading the agent's stream failed: %s", type(item).__name__)
                self._fail(ClientErrorCode.AGENT_UNAVAILABLE, AGENT_STREAM_BROKEN)
                return
            if self.framer.finished:
                return
            now = self._clock.monotonic()
            for event in self._text.due(now):
                self._relay_event(event)
            if self._abandoned():
                logger.info("the client did not come back within %.0f s: cancelling the agent turn", self._window_s)
                self._send_cancel()
                self.result.outcome = TurnOutcome.ABANDONED
                return
            if self._cancel_sent_at is not None and now - self._cancel_sent_at > self._grace_s:
                logger.warning("the agent did not end the cancelled turn within %.1f s; ending it here", self._grace_s)
                self._emit(AgentEnd(request_id=self.request.turn_id, status=TurnStatus.CANCELLED.value))
                return

    def _wait_s(self) -> float:
        """How long the next read may block: until the next poll, or until held text is due if sooner."""
        deadline = self._text.deadline
        if deadline is None:
            return self._poll_s
        return max(0.0, min(self._poll_s, deadline - self._clock.monotonic()))

    def _emit(self, event: AgentEvent) -> None:
        """Relay ``event`` through the text coalescer: text may wait (at most its window); anything else goes now,
        after the text held before it."""
        for ready in self._text.push(event, self._clock.monotonic()):
            if self.framer.finished:
                logger.warning("skipping an agent event after the turn's end: %s", ready.type)
                continue
            self._relay_event(ready)

    def _feed(self, events: list[SseEvent]) -> None:
        for sse in events:
            try:
                event = parse_event(sse.data)
            except ProtocolError as exc:
                logger.warning("skipping an agent event that does not parse: %s", exc.code)
                continue
            self._emit(event)

    def _relay_event(self, event: AgentEvent) -> None:
        try:
            numbered = self.framer.frame_numbered(event)
        except RelayError as exc:
            logger.error("an agent event could not be framed: %s", exc.code)
            self._fail(ClientErrorCode.INTERNAL, "the agent sent something the gateway cannot relay: try again")
            return
        if self.framer.finished:
            self._on_terminal(event)  # the outcome is known before the terminal is posted (the record gets it)
        for seq, message in numbered:
            self.buffer.append(seq, message)
            delivered = self._deliver_numbered(seq, message)
            if delivered and isinstance(event, AudioChunk) and self.result.time_to_first_audio_s is None:
                self.result.time_to_first_audio_s = round(self._clock.monotonic() - self._started, 4)

    def _fail(self, code: ClientErrorCode, message: str) -> None:
        for held in self._text.flush(self._clock.monotonic()):  # the text the client was owed comes first
            self._relay_event(held)
        if self.framer.finished:
            return
        self.result.error_codes.append(code.value)
        self.result.outcome = TurnOutcome.FAILED
        for seq, text in self.framer.fail_numbered(code, message):
            self.buffer.append(seq, text)
            self._deliver_numbered(seq, text)

    def _on_terminal(self, event: AgentEvent) -> None:
        if isinstance(event, AgentEnd):
            cancelled = event.status == TurnStatus.CANCELLED.value
            self.result.outcome = TurnOutcome.CANCELLED if cancelled else TurnOutcome.COMPLETED
        else:
            self.result.outcome = TurnOutcome.FAILED
            self.result.error_codes.append(getattr(event, "code", ClientErrorCode.INTERNAL.value))
        if self._cancel_sent_at is not None:
            self.result.cancel_latency_s = round(self._clock.monotonic() - self._cancel_sent_at, 4)

    # --- delivery -----------------------------------------------------------------------------------------

    def _deliver_numbered(self, seq: int, message: str) -> bool:
        if self.framer.finished and seq == self.framer.next_seq - 1:
            self._free_connection()  # the terminal: the client may start its next turn the moment it arrives
        delivered = self._deliver(message)
        if delivered and seq == self._posted_through + 1:
            self._posted_through = seq
        return delivered

    def _deliver(self, message: str) -> bool:
        if self.detached_since is not None:
            return False
        try:
            delivered = self._poster.post(self.connection_id, message)
        except PostFailedError as exc:
            logger.error("a message could not be posted and stays buffered for a resume: %s", exc)
            self.result.failed_posts += 1
            self._undelivered = True
            return False
        if not delivered:
            logger.info("the client's connection is gone; buffering for a resume")
            self.detached_since = self._clock.now()
            try:
                self._turns.mark_detached(self.request.turn_id, connection_id=self.connection_id)
            except (ClientError, BotoCoreError) as exc:  # the relay's own clock still bounds the wait
                logger.warning("recording the detachment failed: %s", type(exc).__name__)
            return False
        self.result.posted += 1
        return True

    def _free_connection(self) -> None:
        """Before the terminal message goes to :attr:`connection_id`: mark the record ``ended`` (once) and release
        the connection's claim on the turn. A failed write is logged, never allowed to hold back the terminal (the
        record is written again at the end, and a claim lapses after ``connections.MAX_TURN_S``)."""
        try:
            if not self._ended:
                self._turns.end(self.request.turn_id, outcome=self.result.outcome)
                self._ended = True
            self._connections.release_turn(self.connection_id, self.request.turn_id)
        except (ClientError, BotoCoreError) as exc:
            logger.warning("freeing the connection before the terminal message failed: %s", type(exc).__name__)

    # --- the turn record ----------------------------------------------------------------------------------

    def _poll_tolerantly(self) -> None:
        """:meth:`_poll`, where a failed read (DynamoDB throttling or a network blip) only skips this poll."""
        try:
            self._poll()
        except (ClientError, BotoCoreError) as exc:
            logger.warning("reading the turn record failed; trying again at the next poll: %s", type(exc).__name__)

    def _poll(self) -> Turn | None:
        return self._apply(self._turns.get(self.request.turn_id))

    def _apply(self, turn: Turn | None) -> Turn | None:
        """Act on a read of the turn record: cancel, a resume (switch), a detachment."""
        if turn is None:
            logger.error("the turn record disappeared; treating the client as gone")
            self.detached_since = self.detached_since or 0.0
            return None
        # A flag seen after the stream's end still matters when it says what was heard (the agent cuts its memory).
        wanted = not self.framer.finished or turn.played_ms is not None
        if turn.cancel_requested and self._cancel_sent_at is None and wanted:
            self._send_cancel(played_ms=turn.played_ms)
        if turn.resume_count > self._seen_resumes:
            self._seen_resumes = turn.resume_count
            self._switch(turn.connection_id, turn.resume_after_seq)
        elif turn.detached_at is not None and self.detached_since is None:
            self.detached_since = turn.detached_at
        return turn

    def _send_cancel(self, *, played_ms: int | None = None) -> None:
        if self._cancel_sent_at is not None:
            return
        self._cancel_sent_at = self._clock.monotonic()
        try:
            cancelled = self._agent.cancel(
                session_id=self.request.session_id, request_id=self.request.turn_id, played_ms=played_ms
            )
        except AgentUnavailableError as exc:
            logger.error("the agent's cancel request failed: %s", exc)
            return
        logger.info("asked the agent to cancel the turn (%d cancelled)", len(cancelled))

    def _switch(self, connection_id: str, after_seq: int) -> None:
        """A resume: replay after ``after_seq`` to ``connection_id``, then continue live there. On the same
        connection (a client that heard nothing for a while, or saw a gap) the messages already posted to it are
        not posted again: they are on their way over the same ordered socket, so only what never left is replayed
        (no duplicates from a resume that crossed messages in flight)."""
        if connection_id == self.connection_id and self.detached_since is None:
            after_seq = max(after_seq, self._posted_through)
        self.connection_id = connection_id
        self.detached_since = None
        self.result.replays += 1
        try:
            backlog = self.buffer.after(after_seq)
        except (ResumeExpiredError, InvalidFieldError) as exc:
            logger.warning("a resume cannot be served from the buffer: %s", exc.code)
            self.result.error_codes.append(exc.code)
            self._post_rejection(exc)
            self.detached_since = 0.0  # the client cannot use this turn any more: abandon it
            return
        logger.info("resumed: replaying %d message(s)", len(backlog))
        self._undelivered = False
        self._posted_through = after_seq
        if not self._deliver(serialize(TurnAccepted(self.request.turn_id))):
            return
        for seq, message in enumerate(backlog, start=after_seq + 1):
            if not self._deliver_numbered(seq, message):
                return
            self.result.replayed_messages += 1
        if self.framer.finished and not backlog:
            self._free_connection()  # the client already holds the terminal: its resume claimed the connection

    def _post_rejection(self, exc: RelayError) -> None:
        try:
            error = GatewayError.from_exception(exc, turn_id=self.request.turn_id)
            self._poster.post(self.connection_id, serialize(error))
        except PostFailedError as post_exc:
            logger.error("the resume rejection could not be posted: %s", post_exc)

    def _abandoned(self) -> bool:
        return self.detached_since is not None and self._clock.now() - self.detached_since > self._window_s

    # --- the end ------------------------------------------------------------------------------------------

    def _linger_for_resume(self) -> None:
        """The agent is done but the client is away: wait up to the resume window for it to come back."""
        if self.result.outcome == TurnOutcome.ABANDONED:
            return
        if not self._ended:
            self._turns.end(self.request.turn_id, outcome=self.result.outcome)
            self._ended = True
        if self.detached_since is None:
            self._poll()
        if self.detached_since is None and self._undelivered:
            logger.info("some messages could not be posted: waiting for the client's resume")
            self.detached_since = self._clock.now()
        while self.detached_since is not None and not self._abandoned():
            self._sleep(self._poll_s)
            self._poll_tolerantly()

    def _close(self) -> None:
        """Close the record; if a resume slipped in meanwhile (the write fails), serve it and try again."""
        for _ in range(3):
            closed = self._turns.close(
                self.request.turn_id, seen_resume_count=self._seen_resumes, outcome=self.result.outcome
            )
            if closed:
                break
            self._poll()
        self._connections.release_turn(self.connection_id, self.request.turn_id)
        if self.connection_id != self.request.connection_id:
            self._connections.release_turn(self.request.connection_id, self.request.turn_id)
