"""The relay side of one turn (docs/functions.md, "The relay") as a sans-I/O state machine: facts in, commands out.

The gateway's relay reads the agent's SSE stream and posts the turn's numbered messages to the client's WebSocket,
steered by the turn record (cancel, resume, disconnect). :class:`RelayTurn` holds every rule of that; its driver
only executes commands (:mod:`relay_core.relay.commands`) and reports what happened:

- inputs (:class:`RelayInput`): the agent's stream bytes, its end or failure, an agent that could not be reached,
  a read of the turn record, a clock tick; each is allowed only in the phases
  :data:`~relay_core.relay.phases.PHASE_TABLE` lists, and only
  when the machine is idle (:meth:`RelayTurn.next_command` returned None), otherwise
  :class:`~relay_core.errors.SessionStateError` says what to do first;
- commands (:meth:`RelayTurn.next_command`): post, free the connection, end / read / close the record, cancel the
  agent, mark detached, close the stream, release a connection, log. A command with a result (``ANSWERS``) must be
  answered before anything else happens.

Guarantees:

- **The connection is freed before the terminal is posted.** Every :class:`Post` of the terminal message, live or
  replayed, comes right after a :class:`FreeConnection` for the same connection that the driver answered, and the
  first one marks the record ``ended``: a client that sends ``sendMessage`` the moment the terminal arrives finds
  its connection free. No order of inputs can post the terminal otherwise.
- Messages reach a connection in seq order; after a resume, ``turn_accepted`` then the messages after the
  client's ``after_seq`` (on the same connection, none it was already sent), then live ones.
- Exactly one terminal message per turn; the machine always ends in ``done`` with one successful (or three tried)
  :class:`CloseRecord` and :class:`ReleaseConnection` for the connection it ends on (and the first one).

Phases: ``streaming`` (the agent's stream is open) → ``lingering`` (the terminal is framed: it is delivered, and
a client that is away is waited for, up to the resume window) → ``closing`` → ``done``; a client away longer than
the window while the agent still streams goes straight to ``closing`` (outcome ``abandoned``).
"""

from __future__ import annotations

import math
from collections import deque
from enum import Enum

from relay_core import limits
from relay_core.agent.events import AgentEnd, AgentEvent, AgentFailed, AudioChunk, TurnStatus, parse_event
from relay_core.client.framing import TurnFramer
from relay_core.client.messages import ClientErrorCode, Rejection, TurnAccepted, serialize
from relay_core.errors import InvalidFieldError, ProtocolError, RelayError, ResumeExpiredError, SessionStateError
from relay_core.relay.commands import (
    ANSWERS,
    CancelAgent,
    CloseRecord,
    CloseStream,
    EndRecord,
    FreeConnection,
    Log,
    LogLevel,
    MarkDetached,
    Post,
    PostKind,
    PostOutcome,
    ReadRecord,
    RecordRead,
    RelayCommand,
    RelayResult,
    ReleaseConnection,
)
from relay_core.relay.phases import PHASE_TABLE, RelayInput, RelayPhase
from relay_core.relay.resume_buffer import ResumeBuffer
from relay_core.relay.turn_record import RelayOutcome
from relay_core.sse import SseDecoder
from relay_core.text.coalescing import TextCoalescer

CANCEL_GRACE_S = 5.0
"""After its cancel request, how long the agent has to end the turn before the relay ends it itself."""
CLOSE_ATTEMPTS = 3
"""Closing the record is tried this often, serving a resume that slipped in between tries."""
AGENT_STREAM_BROKEN = "the agent's stream ended before the turn did: send the message again"
AGENT_UNREACHABLE = "the agent could not be reached: try again in a moment"
RELAY_FAILED = "the gateway lost this turn: send the message again"
CANNOT_RELAY = "the agent sent something the gateway cannot relay: try again"


class _Linger(Enum):
    NOT_STARTED = "not_started"
    READING = "reading"
    WAITING = "waiting"


class RelayTurn:
    """One turn's relay rules (see the module docstring). Not thread-safe: drive it from one thread."""

    def __init__(
        self,
        turn_id: str,
        connection_id: str,
        *,
        resume_window_s: float,
        started: float,
        cancel_grace_s: float = CANCEL_GRACE_S,
        text_window_s: float = limits.TEXT_COALESCE_WINDOW_S,
        buffer: ResumeBuffer | None = None,
    ) -> None:
        self.turn_id = turn_id
        self.first_connection_id = connection_id
        self.connection_id = connection_id
        """Where messages go now (a resume switches it)."""
        self.phase = RelayPhase.STREAMING
        self.result = RelayResult()
        self.framer = TurnFramer(turn_id)
        self.buffer = buffer if buffer is not None else ResumeBuffer()
        self.detached_since: float | None = None
        """When the client went away (``-inf``: it cannot come back); None while it is there."""
        self._window_s = resume_window_s
        self._grace_s = cancel_grace_s
        self._decoder = SseDecoder()
        self._text = TextCoalescer(text_window_s)
        self._started = started
        self._now = started
        self._queue: deque[RelayCommand] = deque()
        self._awaiting: RelayCommand | None = None
        self._idle = True
        self._cursor = 0
        """The next seq to post to :attr:`connection_id`."""
        self._replay_through = -1
        self._posted_through = -1
        """Every message up to this seq was delivered to the current connection, without a gap."""
        self._undelivered = False
        self._freed_for_terminal = False
        self._ended = False
        self._seen_resumes = 0
        self._cancel_sent_at: float | None = None
        self._first_audio_seq: int | None = None
        self._ready: deque[AgentEvent] = deque()
        """Events to frame, in order (one is framed once the messages before it are delivered)."""
        self._terminal_queued = False
        """The terminal event is among :attr:`_ready` or framed: nothing else may end the turn."""
        self._failed_internally = False
        self._linger = _Linger.NOT_STARTED
        self._close_attempts = 0
        self._closed = False

    # --- state ------------------------------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self.phase is RelayPhase.DONE

    @property
    def closing(self) -> bool:
        """The turn is being closed (or is done): a failure now has nothing left to end."""
        return self.phase in (RelayPhase.CLOSING, RelayPhase.DONE)

    @property
    def deadline(self) -> float | None:
        """The earliest time a :meth:`tick` may change something (held text, the resume window, the cancel grace)."""
        times: list[float] = []
        if self.phase is RelayPhase.STREAMING:
            if self._text.deadline is not None:
                times.append(self._text.deadline)
            if self._cancel_sent_at is not None:
                times.append(self._cancel_sent_at + self._grace_s)
        if self.phase in (RelayPhase.STREAMING, RelayPhase.LINGERING) and self.detached_since is not None:
            times.append(self.detached_since + self._window_s)
        return min(times) if times else None

    # --- commands ---------------------------------------------------------------------------------------------

    def next_command(self) -> RelayCommand | None:
        """The next command to execute, or None when the machine waits for an input."""
        if self._awaiting is not None:
            raise SessionStateError(
                f"turn {self.turn_id}: {type(self._awaiting).__name__} is unanswered: "
                f"report its result with {ANSWERS[type(self._awaiting)]} first"
            )
        while True:
            command = self._queue.popleft() if self._queue else self._delivery()
            if command is not None:
                if type(command) in ANSWERS:
                    self._awaiting = command
                return command
            if self._ready and self.phase is RelayPhase.STREAMING:
                self._frame_next()
                continue
            if not self._progress():
                self._idle = True
                return None

    # --- inputs -----------------------------------------------------------------------------------------------

    def agent_bytes(self, data: bytes, now: float) -> None:
        """Bytes of the agent's SSE body, as they arrived (any chunking)."""
        if self._accept(RelayInput.AGENT_BYTES, now):
            try:
                events = self._decoder.feed(data)
            except RelayError as exc:
                self._log(LogLevel.ERROR, f"the agent's stream cannot be decoded: {exc.code}")
                self._fail_internally()
            else:
                for sse in events:
                    self._parse_and_emit(sse.data)
            self._after_input()

    def agent_closed(self, now: float) -> None:
        """The agent's stream ended."""
        if self._accept(RelayInput.AGENT_CLOSED, now):
            for sse in self._decoder.close():
                self._parse_and_emit(sse.data)
            if not self._terminal_queued:
                self._log(LogLevel.ERROR, "the agent's stream ended without a terminal event")
                self._fail(ClientErrorCode.AGENT_UNAVAILABLE, AGENT_STREAM_BROKEN)
            self._after_input()

    def agent_failed(self, now: float) -> None:
        """Reading the agent's stream failed."""
        if self._accept(RelayInput.AGENT_FAILED, now):
            self._fail(ClientErrorCode.AGENT_UNAVAILABLE, AGENT_STREAM_BROKEN)
            self._after_input()

    def agent_unreachable(self, now: float) -> None:
        """The agent could not be invoked."""
        if self._accept(RelayInput.AGENT_UNREACHABLE, now):
            self._fail(ClientErrorCode.AGENT_UNAVAILABLE, AGENT_UNREACHABLE)
            self._after_input()

    def record_read(self, read: RecordRead | None, now: float) -> None:
        """A read of the turn record (None: it is gone): the answer to :class:`ReadRecord`, or a poll's."""
        if isinstance(self._awaiting, ReadRecord):
            self._answer(now)
            self._apply(read)
            self._after_read()
        elif self._accept(RelayInput.RECORD_READ, now):
            self._apply(read)
            self._after_input()

    def record_unreadable(self, now: float) -> None:
        """The answer to :class:`ReadRecord` when the read failed (it is skipped)."""
        self._expect(ReadRecord, "record_unreadable")
        self._answer(now)
        self._after_read()

    def tick(self, now: float) -> None:
        """Time passed (see :attr:`deadline`)."""
        if self._accept(RelayInput.TICK, now):
            self._after_input()

    def post_done(self, outcome: PostOutcome, now: float) -> None:
        """The answer to :class:`Post`."""
        post = self._expect(Post, "post_done")
        self._answer(now)
        if outcome is PostOutcome.DELIVERED:
            self._delivered(post)
        elif post.kind is PostKind.REJECTION:
            pass  # the client is already given up on
        elif outcome is PostOutcome.GONE:
            self._log(LogLevel.INFO, "the client's connection is gone; buffering for a resume")
            self.detached_since = now
            self._queue.append(MarkDetached(post.connection_id))
        else:
            self.result.failed_posts += 1
            self._undelivered = True
            self._skip_failed(post)
        if post.terminal:
            self._freed_for_terminal = False

    def connection_freed(self, now: float, *, record_ended: bool = True) -> None:
        """The answer to :class:`FreeConnection`, done or not (``record_ended``: the end write succeeded): a
        failed write never holds back the terminal."""
        freed = self._expect(FreeConnection, "connection_freed")
        self._answer(now)
        self._ended = self._ended or (freed.end_record and record_ended)
        self._freed_for_terminal = True

    def record_closed(self, closed: bool, now: float) -> None:
        """The answer to :class:`CloseRecord`: False when a resume came first (it is served, then closing again)."""
        self._expect(CloseRecord, "record_closed")
        self._answer(now)
        self._closed = closed
        if not closed:
            self._queue.append(ReadRecord())

    def internal_failure(self, now: float) -> None:
        """The driver failed unexpectedly (a bug, whatever command was under way): the agent is cancelled, the
        client gets ``error internal_error`` and the turn closes. A second failure stops delivering at once."""
        if self.closing:
            raise SessionStateError(f"turn {self.turn_id}: the relay failed while closing: let the failure propagate")
        self._now = now
        self._idle = False
        pending, self._awaiting = self._awaiting, None
        if isinstance(pending, Post):
            self._skip_failed(pending)
        if self._failed_internally:
            self._queue.clear()
            self._queue.append(CloseStream())
            self.detached_since = -math.inf  # nothing more is posted
            self.phase = RelayPhase.CLOSING
            return
        self._fail_internally()

    # --- internals: inputs ------------------------------------------------------------------------------------

    def _accept(self, kind: RelayInput, now: float) -> bool:
        """Whether ``kind`` acts now (False: ignored in this phase); raises when it is not allowed at all."""
        if self._awaiting is not None or not self._idle:
            raise SessionStateError(
                f"turn {self.turn_id}: {kind.value} while commands are pending: call next_command() "
                "(and answer what it returns) until it returns None first"
            )
        rules = PHASE_TABLE[self.phase]
        if kind not in rules:
            raise SessionStateError(f"turn {self.turn_id}: {kind.value} is not accepted while {self.phase.value}")
        self._now = now
        self._idle = False
        return not rules[kind].startswith("ignored")

    def _expect[C](self, kind: type[C], answer: str) -> C:
        if not isinstance(self._awaiting, kind):
            waiting = "nothing" if self._awaiting is None else type(self._awaiting).__name__
            raise SessionStateError(f"turn {self.turn_id}: {answer}() answers {kind.__name__}, but {waiting} is due")
        return self._awaiting

    def _answer(self, now: float) -> None:
        self._awaiting = None
        self._now = now
        self._idle = False

    def _after_input(self) -> None:
        if self.phase is not RelayPhase.STREAMING:
            return
        self._ready.extend(self._text.due(self._now))
        if self._abandoned():
            self._log(LogLevel.INFO, f"the client did not come back within {self._window_s:g} s: cancelling the turn")
            self._send_cancel(None)
            self.result.outcome = RelayOutcome.ABANDONED
            self._queue.append(CloseStream())
            self.phase = RelayPhase.CLOSING
        elif self._terminal_queued:
            return
        elif self._cancel_sent_at is not None and self._now - self._cancel_sent_at >= self._grace_s:
            self._log(LogLevel.WARNING, f"the agent did not end the cancelled turn within {self._grace_s:g} s")
            self._emit(AgentEnd(request_id=self.turn_id, status=TurnStatus.CANCELLED.value))

    def _after_read(self) -> None:
        if self._linger is _Linger.READING:
            self._linger = _Linger.WAITING
            if self.detached_since is None and self._undelivered:
                self._log(LogLevel.INFO, "some messages could not be posted: waiting for the client's resume")
                self.detached_since = self._now

    def _abandoned(self) -> bool:
        return self.detached_since is not None and self._now - self.detached_since >= self._window_s

    def _apply(self, read: RecordRead | None) -> None:
        if read is None:
            self._log(LogLevel.ERROR, "the turn record disappeared; treating the client as gone")
            self.detached_since = -math.inf
            return
        # A flag seen after the terminal still matters when it says what was heard (the agent cuts its memory).
        wanted = not self._terminal_queued or read.played_ms is not None
        if read.cancel_requested and wanted:
            self._send_cancel(read.played_ms)
        if read.resume_count > self._seen_resumes:
            self._seen_resumes = read.resume_count
            self._switch(read.connection_id, read.resume_after_seq)
        elif read.away_s is not None and self.detached_since is None:
            self.detached_since = self._now - read.away_s

    def _send_cancel(self, played_ms: int | None) -> None:
        if self._cancel_sent_at is None:
            self._cancel_sent_at = self._now
            self._queue.append(CancelAgent(played_ms))

    def _switch(self, connection_id: str, after_seq: int) -> None:
        """A resume: ``turn_accepted`` and the messages after ``after_seq`` to ``connection_id``, then live there.
        On the same connection, messages already delivered there are not posted again (they are on their way)."""
        if connection_id == self.connection_id and self.detached_since is None:
            after_seq = max(after_seq, self._posted_through)
        self.connection_id = connection_id
        self.detached_since = None
        self._freed_for_terminal = False
        self.result.replays += 1
        try:
            backlog = len(self.buffer.after(after_seq))
        except (ResumeExpiredError, InvalidFieldError) as exc:
            self._log(LogLevel.WARNING, f"a resume cannot be served from the buffer: {exc.code}")
            self.result.error_codes.append(exc.code)
            rejection = serialize(Rejection.from_exception(exc, turn_id=self.turn_id))
            self._queue.append(Post(connection_id, rejection, None, PostKind.REJECTION))
            self.detached_since = -math.inf  # the client cannot use this turn any more: abandon it
            return
        self._log(LogLevel.INFO, f"resumed: replaying {backlog} message(s)")
        self._undelivered = False
        self._posted_through = after_seq
        self._cursor = after_seq + 1
        self._replay_through = self.buffer.last_seq
        self._queue.append(Post(connection_id, serialize(TurnAccepted(self.turn_id)), None, PostKind.ACCEPTED))
        if self.framer.finished and not backlog:  # the client holds the terminal: release what its resume claimed
            self._queue.append(FreeConnection(connection_id, self.result.outcome, end_record=not self._ended))

    # --- internals: events → messages -------------------------------------------------------------------------

    def _parse_and_emit(self, data: str) -> None:
        try:
            event = parse_event(data)
        except ProtocolError as exc:
            self._log(LogLevel.WARNING, f"skipping an agent event that does not parse: {exc.code}")
            return
        self._emit(event)

    def _emit(self, event: AgentEvent) -> None:
        """Through the text coalescer (text may wait its window; anything else goes after the text held before
        it) into the events ready to frame, which are framed one at a time as delivery catches up."""
        for ready in self._text.push(event, self._now):
            self._terminal_queued = self._terminal_queued or isinstance(ready, AgentEnd | AgentFailed)
            self._ready.append(ready)

    def _frame_next(self) -> None:
        """Frame the next ready event into the buffer (its messages are then delivered before the next is framed,
        so the buffer never evicts a message before it was posted)."""
        event = self._ready.popleft()
        if self.framer.finished:
            self._log(LogLevel.WARNING, f"skipping an agent event after the turn's end: {event.type}")
            return
        try:
            numbered = self.framer.frame_numbered(event)
        except RelayError as exc:
            self._log(LogLevel.ERROR, f"an agent event could not be framed: {exc.code}")
            self._ready.appendleft(
                AgentFailed(request_id=self.turn_id, code=ClientErrorCode.INTERNAL.value, message=CANNOT_RELAY)
            )
            return
        for seq, message in numbered:
            self.buffer.append(seq, message)
            if isinstance(event, AudioChunk) and self._first_audio_seq is None:
                self._first_audio_seq = seq
        if self.framer.finished:
            self._on_terminal(event)

    def _on_terminal(self, event: AgentEvent) -> None:
        if isinstance(event, AgentEnd):
            cancelled = event.status == TurnStatus.CANCELLED.value
            self.result.outcome = RelayOutcome.CANCELLED if cancelled else RelayOutcome.COMPLETED
        else:
            self.result.outcome = RelayOutcome.FAILED
            self.result.error_codes.append(
                event.code if isinstance(event, AgentFailed) else ClientErrorCode.INTERNAL.value
            )
        if self._cancel_sent_at is not None:
            self.result.cancel_latency_s = round(self._now - self._cancel_sent_at, 4)
        self.phase = RelayPhase.LINGERING

    def _fail(self, code: ClientErrorCode, message: str) -> None:
        """End the turn with ``error`` ``code`` (after the text the client was owed), unless it already ended."""
        if not self._terminal_queued:
            self._emit(AgentFailed(request_id=self.turn_id, code=code.value, message=message))

    def _fail_internally(self) -> None:
        self._failed_internally = True
        self._ready.clear()  # what was not framed yet is dropped: the error comes next
        self._terminal_queued = self.framer.finished
        if not self.framer.finished:
            self._send_cancel(None)
            self._fail(ClientErrorCode.INTERNAL, RELAY_FAILED)
        elif self._linger is not _Linger.NOT_STARTED:
            self.phase = RelayPhase.CLOSING

    # --- internals: delivery and progress ---------------------------------------------------------------------

    def _delivery(self) -> RelayCommand | None:
        """The next post to the current connection, in seq order (the terminal only once the connection is freed)."""
        if self.detached_since is not None or self.phase is RelayPhase.DONE or self._cursor > self.buffer.last_seq:
            return None
        if self._cursor < self.buffer.first_seq:  # evicted before it could be posted: a gap the client can see
            self._undelivered = True
            self._cursor = self.buffer.first_seq
        seq = self._cursor
        terminal = self.framer.finished and seq == self.framer.last_seq
        if terminal and not self._freed_for_terminal:
            return FreeConnection(self.connection_id, self.result.outcome, end_record=not self._ended)
        return Post(self.connection_id, self.buffer.message(seq), seq, PostKind.MESSAGE, terminal)

    def _delivered(self, post: Post) -> None:
        if post.kind is not PostKind.REJECTION:
            self.result.posted += 1
        if post.seq is None:
            return
        self._cursor = post.seq + 1
        if post.seq == self._posted_through + 1:
            self._posted_through = post.seq
        if post.seq <= self._replay_through:
            self.result.replayed_messages += 1
        first_audio = self._first_audio_seq
        if first_audio is not None and post.seq >= first_audio and self.result.time_to_first_audio_s is None:
            self.result.time_to_first_audio_s = round(self._now - self._started, 4)

    def _skip_failed(self, post: Post) -> None:
        """A post that failed for good: a failed replay skips the rest of the replay, a live message itself."""
        if post.kind is PostKind.ACCEPTED or (post.seq is not None and post.seq <= self._replay_through):
            self._cursor = max(self._cursor, self._replay_through + 1)
        elif post.seq is not None:
            self._cursor = max(self._cursor, post.seq + 1)

    def _progress(self) -> bool:
        """Move on once nothing is queued or due for delivery; False when only an input can move the turn."""
        if self.phase is RelayPhase.LINGERING:
            return self._progress_linger()
        if self.phase is RelayPhase.CLOSING:
            if not self._closed and self._close_attempts < CLOSE_ATTEMPTS:
                self._close_attempts += 1
                self._queue.append(CloseRecord(self._seen_resumes, self.result.outcome))
                return True
            self._queue.append(ReleaseConnection(self.connection_id))
            if self.connection_id != self.first_connection_id:
                self._queue.append(ReleaseConnection(self.first_connection_id))
            self.result.messages = self.framer.next_seq
            self.phase = RelayPhase.DONE
            return True
        return False

    def _progress_linger(self) -> bool:
        if self._linger is _Linger.NOT_STARTED:
            self._queue.append(CloseStream())
            if self._failed_internally:
                self.phase = RelayPhase.CLOSING
                return True
            if not self._ended:
                self._ended = True
                self._queue.append(EndRecord(self.result.outcome))
            if self.detached_since is None:
                self._linger = _Linger.READING
                self._queue.append(ReadRecord())
            else:
                self._linger = _Linger.WAITING
            return True
        if self.detached_since is None or self._abandoned():
            self.phase = RelayPhase.CLOSING
            return True
        return False

    def _log(self, level: LogLevel, message: str) -> None:
        self._queue.append(Log(level, message))


__all__ = [
    "AGENT_STREAM_BROKEN",
    "AGENT_UNREACHABLE",
    "CANCEL_GRACE_S",
    "RelayTurn",
]
