"""The turn relay's driver: runs :class:`relay_core.relay.turn.RelayTurn` (every rule of the relay lives there)
against AWS, one agent turn from AgentCore's SSE stream to the client's WebSocket.

:class:`TurnRelay` (the turns/connections stores, the poster and the agent are injected) does only I/O:

- it takes the turn record (a conditional write): a repeated asynchronous invocation of the same turn does
  nothing (outcome ``duplicate``); then it opens the agent's turn (``invoke_agent_runtime``);
- a reader thread takes the body as it arrives, and a watcher thread reads the turn record every
  :data:`POLL_INTERVAL_S` (one consistent GetItem); both queue what they get, and the relay thread feeds each item
  to the machine in order, so a slow read never holds up a post and the first agent call waits for no poll;
- it executes each command the machine returns (posts, the record's writes, the agent's cancel, closing the
  stream) and reports the results. A write or read that fails with an AWS error is logged and reported as not
  done; an unexpected exception is logged with its stack and reported as :meth:`RelayTurn.internal_failure`.
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass

from botocore.exceptions import BotoCoreError, ClientError

from relay_core import limits
from relay_core.relay.commands import (
    CancelAgent,
    CloseRecord,
    CloseStream,
    EndRecord,
    FreeConnection,
    Log,
    MarkDetached,
    Post,
    PostOutcome,
    ReadRecord,
    RecordRead,
    RelayCommand,
    RelayResult,
    ReleaseConnection,
)
from relay_core.relay.resume_buffer import ResumeBuffer
from relay_core.relay.turn import CANCEL_GRACE_S, RelayTurn
from relay_core.relay.turn_record import RelayOutcome
from relay_functions.gateway.agent_runtime import AgentRuntime, AgentUnavailableError, TurnStream
from relay_functions.gateway.clock import SYSTEM_CLOCK, Clock
from relay_functions.gateway.connections import ConnectionStore
from relay_functions.gateway.observability import logger
from relay_functions.gateway.posting import ConnectionPoster, PostFailedError
from relay_functions.gateway.relay_request import RelayRequest
from relay_functions.gateway.turns import Turn, TurnStore

POLL_INTERVAL_S = 0.2
"""How often the relay reads the turn record (cancel, resume, disconnect): bounds their latency."""
AWS_ERRORS = (ClientError, BotoCoreError)


@dataclass(frozen=True)
class _StreamEnd:
    error: BaseException | None = None


@dataclass(frozen=True)
class _TurnRead:
    turn: Turn | None


def _thread(target: Callable[[], None], name: str) -> threading.Thread:
    context = contextvars.copy_context()  # the invocation's log keys
    thread = threading.Thread(target=context.run, args=(target,), name=name, daemon=True)
    thread.start()
    return thread


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
        text_window_s: float = limits.TEXT_COALESCE_WINDOW_S,
    ) -> None:
        self.request = request
        self._turns = turns
        self._connections = connections
        self._poster = poster
        self._agent = agent
        self._clock = clock
        self._poll_s = poll_interval_s
        self.machine = RelayTurn(
            request.turn_id,
            request.connection_id,
            resume_window_s=resume_window_s,
            started=clock.monotonic(),
            cancel_grace_s=cancel_grace_s,
            text_window_s=text_window_s,
            buffer=buffer,
        )
        self._items: queue.Queue[object] = queue.Queue()
        self._stream: TurnStream | None = None
        self._stop = threading.Event()

    @property
    def buffer(self) -> ResumeBuffer:
        return self.machine.buffer

    @property
    def detached_since(self) -> float | None:
        return self.machine.detached_since

    def run(self) -> RelayResult:
        """Relay the turn to its end (or until it is abandoned); the record is closed whatever happens. A turn
        that another relay already took is left alone (outcome ``duplicate``)."""
        if not self._turns.claim_relay(self.request.turn_id):
            logger.warning("the turn was already taken by a relay (a repeated invocation): nothing to do")
            return RelayResult(outcome=RelayOutcome.DUPLICATE)
        try:
            self._stream = self._agent.open_turn(session_id=self.request.session_id, payload=self.request.agent)
        except AgentUnavailableError as exc:
            logger.error("the agent could not be invoked: %s", exc)
            self.machine.agent_unreachable(self._clock.monotonic())
        else:
            stream = self._stream
            _thread(lambda: self._read_stream(stream), "agent-stream-reader")
        _thread(self._watch_record, "turn-watcher")
        try:
            self._drive()
        finally:
            self._stop.set()
            self._close_stream()
        return self.machine.result

    def _drive(self) -> None:
        machine = self.machine
        while not machine.done:
            try:
                command = machine.next_command()
                if command is None:
                    self._feed_next()
                else:
                    self._execute(command)
            except Exception:
                if machine.closing:
                    raise
                logger.exception("the relay failed")
                machine.internal_failure(self._clock.monotonic())

    def _feed_next(self) -> None:
        deadline = self.machine.deadline
        wait_s = self._poll_s if deadline is None else min(self._poll_s, deadline - self._clock.monotonic())
        try:
            item = self._items.get(timeout=max(0.0, wait_s))
        except queue.Empty:
            item = None
        now = self._clock.monotonic()
        if isinstance(item, bytes):
            self.machine.agent_bytes(item, now)
        elif isinstance(item, _TurnRead):
            self.machine.record_read(self._read_of(item.turn), now)
        elif isinstance(item, _StreamEnd) and item.error is None:
            self.machine.agent_closed(now)
        elif isinstance(item, _StreamEnd):
            logger.error("reading the agent's stream failed: %s", type(item.error).__name__)
            self.machine.agent_failed(now)
        else:
            self.machine.tick(now)

    def _execute(self, command: RelayCommand) -> None:
        machine, turn_id = self.machine, self.request.turn_id
        if isinstance(command, Post):
            machine.post_done(self._post(command), self._clock.monotonic())
        elif isinstance(command, FreeConnection):
            ended = not command.end_record or self._write(
                "marking the turn ended", self._turns.end, turn_id, outcome=command.outcome
            )
            self._write("releasing the connection", self._connections.release_turn, command.connection_id, turn_id)
            machine.connection_freed(self._clock.monotonic(), record_ended=ended)
        elif isinstance(command, ReadRecord):
            try:
                turn = self._turns.get(turn_id)
            except AWS_ERRORS as exc:
                logger.warning("reading the turn record failed: %s", type(exc).__name__)
                machine.record_unreadable(self._clock.monotonic())
            else:
                machine.record_read(self._read_of(turn), self._clock.monotonic())
        elif isinstance(command, CloseRecord):
            closed = self._turns.close(turn_id, seen_resume_count=command.seen_resume_count, outcome=command.outcome)
            machine.record_closed(closed, self._clock.monotonic())
        elif isinstance(command, CancelAgent):
            self._cancel_agent(command.played_ms)
        elif isinstance(command, MarkDetached):
            self._write(
                "recording the detachment", self._turns.mark_detached, turn_id, connection_id=command.connection_id
            )
        elif isinstance(command, EndRecord):
            self._write("marking the turn ended", self._turns.end, turn_id, outcome=command.outcome)
        elif isinstance(command, CloseStream):
            self._close_stream()
        elif isinstance(command, ReleaseConnection):
            self._connections.release_turn(command.connection_id, turn_id)
        elif isinstance(command, Log):
            getattr(logger, command.level.value)(command.message)

    # --- I/O --------------------------------------------------------------------------------------------------

    def _post(self, post: Post) -> PostOutcome:
        try:
            delivered = self._poster.post(post.connection_id, post.message)
        except PostFailedError as exc:
            logger.error("a message could not be posted (it stays buffered for a resume): %s", exc)
            return PostOutcome.FAILED
        return PostOutcome.DELIVERED if delivered else PostOutcome.GONE

    def _write(self, what: str, write: Callable[..., object], *args: object, **kwargs: object) -> bool:
        """One write whose failure is logged, never fatal (the relay's own clock bounds what depends on it)."""
        try:
            write(*args, **kwargs)
        except AWS_ERRORS as exc:
            logger.warning("%s failed: %s", what, type(exc).__name__)
            return False
        return True

    def _cancel_agent(self, played_ms: int | None) -> None:
        try:
            cancelled = self._agent.cancel(
                session_id=self.request.session_id, request_id=self.request.turn_id, played_ms=played_ms
            )
        except AgentUnavailableError as exc:
            logger.error("the agent's cancel request failed: %s", exc)
            return
        logger.info("asked the agent to cancel the turn (%d cancelled)", len(cancelled))

    def _read_of(self, turn: Turn | None) -> RecordRead | None:
        if turn is None:
            return None
        away_s = None if turn.detached_at is None else max(0.0, self._clock.now() - turn.detached_at)
        return RecordRead(
            connection_id=turn.connection_id,
            cancel_requested=turn.cancel_requested,
            played_ms=turn.played_ms,
            resume_count=turn.resume_count,
            resume_after_seq=turn.resume_after_seq,
            away_s=away_s,
        )

    def _close_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is None:
            return
        try:
            stream.close()
        except Exception:  # noqa: BLE001 - closing a broken body must not mask why we close it
            logger.warning("closing the agent stream failed", exc_info=True)

    # --- the two threads --------------------------------------------------------------------------------------

    def _read_stream(self, stream: TurnStream) -> None:
        try:
            for chunk in stream.chunks():
                self._items.put(chunk)
        except Exception as exc:  # noqa: BLE001 - handed to the relay thread, which ends the turn with it
            self._items.put(_StreamEnd(exc))
            return
        self._items.put(_StreamEnd())

    def _watch_record(self) -> None:
        while not self._stop.wait(self._poll_s):
            try:
                turn = self._turns.get(self.request.turn_id)
            except AWS_ERRORS as exc:
                logger.warning("reading the turn record failed; trying again at the next poll: %s", type(exc).__name__)
                continue
            self._items.put(_TurnRead(turn))


__all__ = ["POLL_INTERVAL_S", "RelayResult", "TurnRelay"]
