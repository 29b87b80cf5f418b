"""One reply being generated: the model's blocking token loop on a thread of its own, its text streamed to the
event loop piece by piece, with ``maxTokens`` and ``stopSequences`` applied on the way.

:meth:`Generation.close` (the client went away, or the reply is complete) sets the model's ``cancel`` event; the
model checks it before every token, so its thread ends within one token's time and the CPU is free again.
:attr:`Generation.finished` is set when the thread has ended. A thread per generation (not a shared pool): many
concurrent echo streams each sleep between tokens, and one slow real-model reply must not hold up the others.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from relay_local.bedrock.models import TextModel
from relay_local.bedrock.wire import ConverseRequest, StopReason, StopScanner, Usage

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Piece:
    text: str


@dataclass(frozen=True, slots=True)
class _End:
    reason: StopReason


@dataclass(frozen=True, slots=True)
class _Failed:
    error: BaseException


class Generation:
    """Start with :meth:`start` on the event loop; iterate :meth:`pieces`; :meth:`close` always (idempotent)."""

    def __init__(self, model: TextModel, request: ConverseRequest) -> None:
        self.model = model
        self.request = request
        self.cancel = threading.Event()
        self.finished = threading.Event()
        self.output_tokens = 0
        self.stop_reason: StopReason | None = None
        self._queue: asyncio.Queue[_Piece | _End | _Failed] = asyncio.Queue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._started = 0.0

    def start(self) -> Generation:
        self._loop = asyncio.get_running_loop()
        self._started = time.perf_counter()
        threading.Thread(target=self._run, name=f"bedrock-{self.model.model_id}", daemon=True).start()
        return self

    def _put(self, item: _Piece | _End | _Failed) -> None:
        assert self._loop is not None
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)
        except RuntimeError:  # the loop has closed (the server stopped under a running generation)
            self.cancel.set()

    def _run(self) -> None:
        scanner = StopScanner(self.request.inference.stop_sequences)
        limit = self.request.inference.max_tokens
        reason = StopReason.END_TURN
        try:
            tokens = self.model.generate(self.request, self.cancel)
            try:
                for token in tokens:
                    self.output_tokens += 1
                    text = scanner.feed(token)
                    if text:
                        self._put(_Piece(text))
                    if scanner.stopped:
                        reason = StopReason.STOP_SEQUENCE
                        break
                    if self.output_tokens >= limit:
                        reason = StopReason.MAX_TOKENS
                        break
                    if self.cancel.is_set():
                        break
            finally:
                close = getattr(tokens, "close", None)
                if close is not None:
                    close()
            if (tail := scanner.flush()) and not self.cancel.is_set():
                self._put(_Piece(tail))
            self._put(_End(reason))
        except Exception as exc:  # handed to the stream, which reports it as a model stream error
            logger.warning("the %s model failed", self.model.model_id, exc_info=exc)
            self._put(_Failed(exc))
        finally:
            self.finished.set()

    async def pieces(self) -> AsyncIterator[str]:
        """The reply's text, piece by piece; raises the model's exception if it failed."""
        while True:
            item = await self._queue.get()
            if isinstance(item, _Piece):
                yield item.text
            elif isinstance(item, _End):
                self.stop_reason = item.reason
                return
            else:
                raise item.error

    def usage(self) -> Usage:
        request = self.request
        prompt = request.system + "".join(m.text for m in request.messages)
        return Usage(
            input_tokens=self.model.count_tokens(prompt),
            output_tokens=self.output_tokens,
            latency_ms=int((time.perf_counter() - self._started) * 1000),
        )

    def close(self) -> None:
        """Stop generating (the model's thread ends before its next token)."""
        self.cancel.set()


__all__ = ["Generation"]
