"""Joining a turn's text deltas before they are relayed, so a token-by-token stream becomes a few messages a second.

An LLM streams its reply a token at a time (40-100 text deltas a second). Relayed one for one, every token is an
``@connections`` POST, an API Gateway message (billed, and counted against the account's message rate) and work
on the phone, for text that nobody reads faster than a few times a second. :class:`TextCoalescer` is a
leading-edge throttle over the agent events of one turn (sans-I/O: the caller passes the time):

* the first text delta after a quiet spell goes out at once (the text appears with no added delay);
* a text delta within ``window_s`` of the last text sent is held, and later ones join it, until the window
  passes (:meth:`due`) or any other event comes, which the held text precedes. Audio, word timings and the
  terminal event are never held, so time to first audio and the order of events are unchanged;
* the joined delta keeps the first delta's ``seq`` and ``request_id``; its text is the deltas' texts joined in
  order, so the client's text is exactly the agent's text.

At most one text message per ``window_s`` leaves, plus one before each non-text event: text is delayed by at
most ``window_s``.
"""

from __future__ import annotations

import dataclasses

from relay_core import limits
from relay_core.agent.events import AgentEvent, TextDelta


class TextCoalescer:
    """Throttles one turn's text deltas (see the module docstring). Not thread-safe; one per turn."""

    def __init__(self, window_s: float = limits.TEXT_COALESCE_WINDOW_S) -> None:
        if window_s < 0:
            raise ValueError(f"window_s must be >= 0; got {window_s}")
        self.window_s = window_s
        self._held: TextDelta | None = None
        self._parts: list[str] = []
        self._last_text_at: float | None = None
        self.joined = 0
        """Text deltas that were folded into an earlier one (messages saved)."""

    @property
    def deadline(self) -> float | None:
        """When held text is due (pass it to :meth:`due`), or None when nothing is held."""
        if self._held is None or self._last_text_at is None:
            return None
        return self._last_text_at + self.window_s

    def push(self, event: AgentEvent, now: float) -> list[AgentEvent]:
        """The events to relay now, in order, for ``event`` arriving at ``now`` (possibly none: text held)."""
        if not isinstance(event, TextDelta):
            return [*self.flush(now), event]
        if self._held is not None:
            self._parts.append(event.text)
            self.joined += 1
            return []
        if self._last_text_at is None or now - self._last_text_at >= self.window_s:
            self._last_text_at = now
            return [event]
        self._held = event
        self._parts = [event.text]
        return []

    def due(self, now: float) -> list[AgentEvent]:
        """The held text, once its window has passed; [] otherwise."""
        deadline = self.deadline
        if deadline is None or now < deadline:
            return []
        return self.flush(now)

    def flush(self, now: float) -> list[AgentEvent]:
        """The held text now, whatever the window ([] when nothing is held)."""
        if self._held is None:
            return []
        joined = dataclasses.replace(self._held, text="".join(self._parts))
        self._held = None
        self._parts = []
        self._last_text_at = now
        return [joined]


__all__ = ["TextCoalescer"]
