"""The recent messages of one turn, kept so that a client that lost its connection can ``resume``.

:class:`ResumeBuffer` holds serialized turn messages by ``seq``, bounded both in count and in UTF-8 bytes; when
either bound is passed the oldest messages are evicted first. :meth:`ResumeBuffer.after` returns exactly the
messages with a greater seq, in order, or raises :class:`~relay_core.errors.ResumeExpiredError` (code
``resume_expired``) when some of them were already evicted, so a client never receives a turn with a hole.
"""

from __future__ import annotations

import itertools
from collections import deque

from relay_core import limits
from relay_core.errors import InvalidFieldError, ResumeExpiredError, SessionStateError


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


class ResumeBuffer:
    """The last messages of one turn (``seq`` contiguous), within ``max_messages`` and ``max_bytes``.

    The newest message is always kept, even if it alone is larger than ``max_bytes``. Not thread-safe."""

    def __init__(
        self,
        *,
        max_messages: int = limits.RESUME_BUFFER_MAX_MESSAGES,
        max_bytes: int = limits.RESUME_BUFFER_MAX_BYTES,
    ) -> None:
        if max_messages < 1 or max_bytes < 1:
            raise ValueError("a ResumeBuffer needs room for at least one message and one byte")
        self.max_messages = max_messages
        self.max_bytes = max_bytes
        self._messages: deque[tuple[str, int]] = deque()
        self._first_seq = 0
        self._bytes = 0
        self.evicted = 0
        """Messages dropped so far to stay within the bounds."""

    def __len__(self) -> int:
        return len(self._messages)

    @property
    def size_bytes(self) -> int:
        """UTF-8 bytes of the messages kept now."""
        return self._bytes

    @property
    def first_seq(self) -> int:
        """Seq of the oldest message kept (the next seq to append when empty)."""
        return self._first_seq

    @property
    def next_seq(self) -> int:
        """The seq :meth:`append` expects next."""
        return self._first_seq + len(self._messages)

    @property
    def last_seq(self) -> int:
        """Seq of the newest message appended; -1 before the first."""
        return self.next_seq - 1

    def append(self, seq: int, message: str) -> None:
        """Keep ``message`` as number ``seq``; seqs must come 0, 1, 2, ... without gaps (the framer's order)."""
        if seq != self.next_seq:
            raise SessionStateError(
                f"ResumeBuffer expected seq {self.next_seq}, got {seq}: append every framed message, in order"
            )
        size = _utf8_size(message)
        self._messages.append((message, size))
        self._bytes += size
        while len(self._messages) > 1 and (len(self._messages) > self.max_messages or self._bytes > self.max_bytes):
            _old, old_size = self._messages.popleft()
            self._bytes -= old_size
            self._first_seq += 1
            self.evicted += 1

    def extend(self, numbered: list[tuple[int, str]]) -> None:
        """Append several ``(seq, message)`` pairs, e.g. :meth:`TurnFramer.frame_numbered`'s result."""
        for seq, message in numbered:
            self.append(seq, message)

    def message(self, seq: int) -> str:
        """The kept message number ``seq``; ``ResumeExpiredError`` if it was evicted, ``InvalidFieldError`` if it
        was never appended."""
        if not 0 <= seq <= self.last_seq:
            raise InvalidFieldError(f"seq {seq} is not a message of the turn (0 to {self.last_seq})")
        if seq < self._first_seq:
            raise ResumeExpiredError(f"message {seq} of the turn is no longer kept")
        return self._messages[seq - self._first_seq][0]

    def after(self, seq: int) -> list[str]:
        """Every kept message with a seq greater than ``seq`` (the client's ``after_seq``; -1 = all), in order.

        Raises ``ResumeExpiredError`` when messages right after ``seq`` were evicted, and ``InvalidFieldError``
        when ``seq`` is below -1 or beyond the last message sent (the client cannot hold it)."""
        if seq < -1:
            raise InvalidFieldError(f"'after_seq' must be >= -1; got {seq}")
        if seq > self.last_seq:
            raise InvalidFieldError(
                f"'after_seq' {seq} is beyond the last message of the turn ({self.last_seq}): "
                "send the last seq you received"
            )
        if seq + 1 < self._first_seq:
            raise ResumeExpiredError(
                f"messages {seq + 1} to {self._first_seq - 1} of the turn are no longer kept: "
                "the turn cannot be resumed; send a new message"
            )
        start = seq + 1 - self._first_seq
        return [message for message, _size in itertools.islice(self._messages, start, None)]


__all__ = ["ResumeBuffer"]
