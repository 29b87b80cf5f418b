"""The server side of one turn of the client protocol (§4), as a sans-I/O state machine: what the relay function
runs between the agent's event stream and ``@connections``.

The I/O layer (the relay Lambda) does four things and nothing else:

1. for each agent event, posts what :meth:`RelayTurn.frame` returns to :attr:`RelayTurn.connection_id`, in
   order; when a post finds the connection gone, calls :meth:`RelayTurn.connection_lost` and posts nothing more;
2. when the turn's record says a ``resume`` switched it to a new connection, posts what
   :meth:`RelayTurn.resume` returns to the new connection (or, if it raises, sends the rejection);
3. if the agent cannot be reached or fails, posts what :meth:`RelayTurn.fail` returns;
4. stops when :meth:`RelayTurn.done` is true: the turn ended and it was delivered, or nobody resumed it in time.

Guarantees: every message of the turn is framed once (numbered, under the frame quota, see
:class:`~relay_core.client_framing.TurnFramer`) and kept in a bounded
:class:`~relay_core.resume_buffer.ResumeBuffer`; a resume within ``resume_window_s`` of the loss replays exactly
the messages after the client's ``after_seq`` to the new connection and later messages go there live, so the
client gets everything once it dedupes by ``seq`` (which :class:`~relay_core.client_session.ClientSession` does).
Time is passed in (``now``, seconds on any one clock), never read.
"""

from __future__ import annotations

from relay_core import limits
from relay_core.agent_events import AgentEvent
from relay_core.client_framing import TurnFramer
from relay_core.client_messages import ClientErrorCode
from relay_core.errors import ResumeExpiredError
from relay_core.resume_buffer import ResumeBuffer


class RelayTurn:
    """One turn being relayed to a client connection. Not thread-safe; one per turn."""

    def __init__(
        self,
        turn_id: str,
        connection_id: str,
        *,
        resume_window_s: float = limits.RESUME_WINDOW_S,
        budget_bytes: int = limits.CLIENT_FRAME_BUDGET_BYTES,
        buffer: ResumeBuffer | None = None,
    ) -> None:
        self.framer = TurnFramer(turn_id, budget_bytes=budget_bytes)
        self.buffer = buffer if buffer is not None else ResumeBuffer()
        self.resume_window_s = resume_window_s
        self.connection_id: str | None = connection_id
        """Where to post now; None while the connection is lost and no resume has come."""
        self.lost_at: float | None = None
        """When the connection was found gone (``now`` of :meth:`connection_lost`); None while attached."""

    @property
    def turn_id(self) -> str:
        return self.framer.turn_id

    @property
    def finished(self) -> bool:
        """The terminal message was framed (it may not be delivered yet)."""
        return self.framer.finished

    @property
    def attached(self) -> bool:
        return self.connection_id is not None

    def frame(self, event: AgentEvent) -> list[str]:
        """Frame and keep one agent event; returns the messages to post now (none while the connection is lost).
        Raises like :meth:`TurnFramer.frame`; nothing is kept then, and :meth:`fail` still ends the turn."""
        return self._keep(self.framer.frame_numbered(event))

    def fail(self, code: str | ClientErrorCode, message: str) -> list[str]:
        """End the turn with a terminal ``error`` (e.g. ``agent_unavailable``); returns what to post now."""
        return self._keep(self.framer.fail_numbered(code, message))

    def connection_lost(self, now: float) -> None:
        """A post found the connection gone: keep framing into the buffer and wait for a resume."""
        if self.connection_id is not None:
            self.connection_id = None
            self.lost_at = now

    def resume_expired(self, now: float) -> bool:
        """The connection was lost more than ``resume_window_s`` ago and no resume came."""
        return self.lost_at is not None and now - self.lost_at > self.resume_window_s

    def resume(self, connection_id: str, after_seq: int, now: float) -> list[str]:
        """Switch the turn to ``connection_id`` and return the messages after ``after_seq`` to post there now.

        Raises ``ResumeExpiredError`` past the window or when the messages were evicted from the buffer, and
        ``InvalidFieldError`` for an ``after_seq`` beyond what was sent; the turn is unchanged then."""
        if self.resume_expired(now):
            raise ResumeExpiredError(
                f"turn {self.turn_id!r} lost its connection more than {self.resume_window_s:g} s ago: "
                "it cannot be resumed; send a new message"
            )
        replay = self.buffer.after(after_seq)
        self.connection_id = connection_id
        self.lost_at = None
        return replay

    def done(self, now: float) -> bool:
        """Nothing more to do: the turn ended while attached (all delivered), or the resume window passed."""
        return (self.finished and self.attached) or self.resume_expired(now)

    def _keep(self, numbered: list[tuple[int, str]]) -> list[str]:
        self.buffer.extend(numbered)
        return [message for _seq, message in numbered] if self.attached else []


__all__ = ["RelayTurn"]
