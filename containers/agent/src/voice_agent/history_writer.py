"""The history store's writes, done on one thread of their own, in the order they were asked for.

Strands calls its session manager from its hooks, synchronously, on the thread running the agent: the agent's event
loop, where every turn's text and audio also move. A conversation's first turn stored its session and agent and
every turn its prompt before the model was even asked (one to five S3 round trips before the first sound), and a
slow S3 held up every other conversation of the process meanwhile. :class:`HistoryWriter` takes those writes off
that path: each is queued (its data already copied, so later changes to the objects Strands keeps cannot reach
it) and done by one worker thread, one at a time, first in first out, so a conversation's objects are written in
the order its turns made them. What needs them written waits for them with :meth:`HistoryWriter.flush`: a turn
before its terminal event (a turn that says it ended has stored what it said), a read of the same conversation,
and the process on its way out (``atexit``).

Guarantees: writes of one key run in submission order, never two at once; a failed write is logged (what failed,
never the message) and counted, and does not stop the writes after it; ``flush`` returns once every write queued
for the key before the call has been attempted, or False at its timeout.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
from collections import Counter
from collections.abc import Callable
from typing import Final

logger = logging.getLogger(__name__)

EXIT_FLUSH_TIMEOUT_S: Final = 10.0
"""How long a process on its way out (SIGTERM from a redeploy, Ctrl-C) waits for queued history writes."""

Write = Callable[[], object]
"""A queued write: what it returns is not used."""


class HistoryWriter:
    """One worker thread performing queued writes, first in first out, with per-key waits (see the module)."""

    def __init__(self, *, name: str = "history-writer") -> None:
        self._queue: queue.SimpleQueue[tuple[str, str, Write]] = queue.SimpleQueue()
        self._pending: Counter[str] = Counter()
        self._done = threading.Condition()
        self._name = name
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self.failures = 0
        """Writes that raised (each logged), since the writer was made."""

    def submit(self, key: str, what: str, write: Write) -> None:
        """Queue ``write`` (``what`` names it in logs: an S3 key, never its content) after every write queued
        before it; returns at once. ``key`` groups the writes a :meth:`flush` waits for (a conversation)."""
        with self._done:
            self._pending[key] += 1
        self._ensure_started()
        self._queue.put((key, what, write))

    def flush(self, key: str | None = None, *, timeout: float) -> bool:
        """Wait until no write of ``key`` (of any key, when None) is queued or running; False at ``timeout``.

        Called on the writer's own thread (a write that reads what it wrote), it returns at once."""
        if self.on_writer_thread():
            return True
        with self._done:
            return self._done.wait_for(lambda: self._idle(key), timeout=timeout)

    def on_writer_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def pending(self, key: str | None = None) -> int:
        """Writes of ``key`` (all, when None) queued or running."""
        with self._done:
            return sum(self._pending.values()) if key is None else self._pending[key]

    def _idle(self, key: str | None) -> bool:
        return not any(self._pending.values()) if key is None else self._pending[key] == 0

    def _ensure_started(self) -> None:
        with self._start_lock:
            if self._thread is None:
                # A daemon, so that it never keeps a process alive; queued writes are flushed at exit instead.
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
                atexit.register(self._flush_at_exit)

    def _run(self) -> None:
        while True:
            key, what, write = self._queue.get()
            try:
                write()
            except Exception as exc:  # noqa: BLE001 -- any failure of one write must not stop the others
                self.failures += 1
                logger.error(
                    "history write failed (%s): %s: %s; the conversation keeps running, this part of it is not "
                    "stored (check the history bucket, the S3 endpoint and the agent role's S3 permissions)",
                    what,
                    type(exc).__name__,
                    exc,
                )
            finally:
                with self._done:
                    self._pending[key] -= 1
                    if self._pending[key] == 0:
                        del self._pending[key]
                    self._done.notify_all()

    def _flush_at_exit(self) -> None:
        left = self.pending()
        if left and not self.flush(timeout=EXIT_FLUSH_TIMEOUT_S):
            logger.error("exiting with %d history write(s) not done after %.0f s", self.pending(), EXIT_FLUSH_TIMEOUT_S)


__all__ = ["EXIT_FLUSH_TIMEOUT_S", "HistoryWriter", "Write"]
