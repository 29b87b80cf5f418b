"""Server-Sent Events framing: encoding, and an incremental decoder that survives any re-chunking.

SageMaker and AgentCore re-chunk response bodies, so one transport chunk may hold half an event or several;
:class:`SseDecoder` buffers bytes and yields each complete event's ``data`` exactly once, whatever the split
(including a split inside a multi-byte UTF-8 character or between ``\\r`` and ``\\n``). Its memory is bounded: an
event (or a line) larger than ``max_event_bytes`` raises :class:`~relay_core.errors.LimitExceededError` instead of
growing the buffer without end.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from relay_core.agent.defaults import MAX_SSE_EVENT_BYTES
from relay_core.errors import LimitExceededError

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def encode_sse(data: str, *, event: str | None = None) -> bytes:
    """One SSE event: ``data: ...\\n\\n``; each line of multi-line data (any line break) becomes a ``data:`` line."""
    lines = [] if event is None else [f"event: {event}"]
    lines.extend(f"data: {line}" for line in _LINE_BREAK.split(data))
    return ("\n".join(lines) + "\n\n").encode("utf-8")


@dataclass(frozen=True, slots=True)
class SseEvent:
    data: str
    event: str = "message"


@dataclass
class SseDecoder:
    """Incremental SSE parser (WHATWG rules for ``data``/``event``; comments and ``id``/``retry`` ignored).

    ``max_event_bytes`` bounds what it holds at any time (the unfinished line plus the event's data so far)."""

    max_event_bytes: int = MAX_SSE_EVENT_BYTES
    _held: int = field(default=0, init=False)
    _buffer: bytearray = field(default_factory=bytearray, init=False)
    _data: list[str] = field(default_factory=list, init=False)
    _event: str = field(default="", init=False)

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Complete events found so far, in order. Raises ``LimitExceededError`` when an event outgrows the bound
        (the decoder is then reset: what was held is dropped)."""
        self._buffer.extend(chunk)
        events: list[SseEvent] = []
        while True:
            line = self._take_line()
            if line is None:
                self._check(len(self._buffer))
                return events
            event = self._line(line)
            if event is not None:
                events.append(event)

    def _check(self, pending: int) -> None:
        if self._held + pending > self.max_event_bytes:
            held = self._held + pending
            self._buffer.clear()
            self._data, self._event, self._held = [], "", 0
            raise LimitExceededError(
                f"an SSE event exceeds {self.max_event_bytes} bytes ({held} held without its end): "
                "the stream is not a stream of agent events, or an event is far larger than any the agent sends"
            )

    def close(self) -> list[SseEvent]:
        """End of stream: an event without its final blank line still counts (as browsers do not, but SageMaker
        bodies sometimes end that way)."""
        events = self.feed(b"\n\n") if self._buffer or self._data else []
        return events

    def _take_line(self) -> bytes | None:
        buf = self._buffer
        lf = buf.find(b"\n")
        cr = buf.find(b"\r", 0, len(buf) if lf == -1 else lf)
        if cr == -1:
            if lf == -1:
                return None
            line = bytes(buf[:lf])
            del buf[: lf + 1]
            return line
        if cr + 1 >= len(buf):  # \r last: the next byte tells whether it is \r\n
            return None
        line = bytes(buf[:cr])
        del buf[: cr + (2 if buf[cr + 1] == 0x0A else 1)]
        return line

    def _line(self, raw: bytes) -> SseEvent | None:
        line = raw.decode("utf-8", errors="replace")
        if not line:
            if not self._data:
                self._event = ""
                return None
            event = SseEvent(data="\n".join(self._data), event=self._event or "message")
            self._data, self._event, self._held = [], "", 0
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._check(len(raw))
            self._data.append(value)
            self._held += len(raw)
        elif name == "event":
            self._event = value
        return None
