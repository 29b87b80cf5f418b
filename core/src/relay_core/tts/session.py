"""Server side of one TTS session, as a sans-I/O state machine (frames in → events and frames out).

The I/O layer (the container's WebSocket handler) does three things and nothing else:

1. hands every received frame to :meth:`TtsServerSession.receive_frame`;
2. drives synthesis: :meth:`next_request` → for each segment, :meth:`is_cancelled` then :meth:`send_audio`
   → :meth:`finish_request` (or :meth:`fail_request`);
3. sends :meth:`data_to_send` after each call, and closes the socket with :attr:`close_code` once
   :attr:`should_close` is true.

A session the instance cannot serve yet waits for a slot (the I/O layer owns the admission queue): it calls
:meth:`TtsServerSession.wait_for_admission` before anything is sent (``queued``), :meth:`still_waiting` every
``QUEUED_REPEAT_S`` while it waits (``queued`` again, its place now), then :meth:`admit` when a slot frees
(``admitted``) or :meth:`refuse_at_capacity` when the wait's bound has passed (a session-level ``error``
``at_capacity``, then close with 1000). While it waits, frames are handled as usual (requests are checked and
kept, ``cancel`` and ``close`` work) and :meth:`next_request` returns None.

Guarantees: requests run one at a time in arrival order; every request that is accepted ends with exactly one
of ``synthesis_complete``, ``synthesis_cancelled`` or ``error`` (``"rejected": false``), except that a session
refused at capacity ends all of its requests at once with its one ``at_capacity`` error; every control message
but ``queued``, ``admitted`` and ``at_capacity`` carries the request id; bad input produces an ``error`` frame
with ``"rejected": true`` and never changes the state of any request (not even one whose id the refused frame
repeated); after ``close`` no new request is accepted and the socket is closed with 1000 once the queue is drained.
"""

from __future__ import annotations

import itertools
import secrets
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import Enum

from relay_core import limits
from relay_core.audio_piece import CODECS, AudioPiece, Codec
from relay_core.close_codes import NORMAL_CLOSURE
from relay_core.errors import AudioFormatError, ProtocolError, SessionStateError
from relay_core.speech_options import SpeechOptions
from relay_core.tts.messages import (
    Cancel,
    Close,
    ServerMessage,
    SessionAdmitted,
    SessionQueued,
    SynthesisCancelled,
    SynthesisComplete,
    SynthesisStart,
    Synthesize,
    TtsErrorCode,
    TtsFailed,
    parse_client_message,
    serialize,
)
from relay_core.word_timings import WordTimings

REMEMBERED_REQUEST_IDS = 4 * limits.MAX_QUEUED_REQUESTS
"""Ended request ids a session remembers to refuse their reuse (the oldest are forgotten first); the ids of
queued and running requests are always refused."""
Frame = str | bytes
"""An outgoing WebSocket frame: ``str`` is a text frame, ``bytes`` a binary one."""


class SessionState(Enum):
    """Lifecycle of a session: OPEN accepts requests; CLOSING finishes the queue; CLOSED sends nothing more."""

    OPEN = "open"
    CLOSING = "closing"
    CLOSED = "closed"


@dataclass(slots=True)
class RunningRequest:
    """The request being synthesized now, with what has been sent for it."""

    request: Synthesize
    cancelled: bool = False
    segments: int = 0
    audio_bytes: int = 0
    samples: int = 0
    """Samples sent so far: where the request's next piece starts on its timeline."""

    @property
    def request_id(self) -> str:
        assert self.request.request_id is not None
        return self.request.request_id


def random_request_id() -> str:
    """A server-assigned request id: short, unique enough within a session, URL-safe."""
    return "req-" + secrets.token_hex(6)


@dataclass
class TtsServerSession:
    """State of one client session on the TTS container. Not thread-safe: drive it from one event loop."""

    default_voice: str
    check_voice: Callable[[str], None] = field(default=lambda _voice: None)
    """Raises ``ProtocolError`` (code ``unknown_voice``) for a voice the engine lacks, before queueing."""
    check_text: Callable[[str, SpeechOptions], None] = field(default=lambda _text, _options: None)
    """Raises ``ProtocolError`` (code ``unsupported_text``) for text the engine cannot speak with these options
    (their voice filled in with the default: the language comes from ``lang`` or the voice), before queueing."""
    new_request_id: Callable[[], str] = field(default=random_request_id)
    max_queued: int = limits.MAX_QUEUED_REQUESTS
    max_remembered_ids: int = REMEMBERED_REQUEST_IDS

    state: SessionState = field(default=SessionState.OPEN, init=False)
    admitted: bool = field(default=True, init=False)
    """False while the session waits in the instance's admission queue (:meth:`wait_for_admission`)."""
    _queue: deque[Synthesize] = field(default_factory=deque, init=False)
    _running: RunningRequest | None = field(default=None, init=False)
    _out: list[Frame] = field(default_factory=list, init=False)
    _seen_ids: OrderedDict[str, None] = field(default_factory=OrderedDict, init=False)
    _counter: itertools.count[int] = field(default_factory=itertools.count, init=False)
    _max_wait_s: float = field(default=0.0, init=False)

    # --- input ---------------------------------------------------------------------------------------------

    def receive_frame(self, data: str | bytes) -> None:
        """Handle one client frame, text or binary. Never raises for bad input: answers an ``error`` frame."""
        if self.state is SessionState.CLOSED:
            return
        try:
            message = parse_client_message(data)
        except ProtocolError as exc:
            self._emit(TtsFailed.from_exception(exc))
            return
        if isinstance(message, Synthesize):
            self._enqueue(message)
        elif isinstance(message, Cancel):
            self._cancel(message.request_id)
        elif isinstance(message, Close):
            self.state = SessionState.CLOSING
            self._maybe_close()

    def _enqueue(self, request: Synthesize) -> None:
        rid = request.request_id
        if self.state is not SessionState.OPEN:
            self._error(TtsErrorCode.SESSION_CLOSING, "the session is closing: open a new session to speak more", rid)
            return
        if rid is not None and self._in_use(rid):
            self._error(
                TtsErrorCode.DUPLICATE_REQUEST_ID,
                f"request_id {rid!r} is already in use in this session: use a new id per request",
                rid,
            )
            return
        if len(self._queue) >= self.max_queued:
            self._error(
                TtsErrorCode.QUEUE_FULL,
                f"{self.max_queued} requests are already queued: wait for some to complete",
                rid,
            )
            return
        voice = request.options.voice or self.default_voice
        try:
            self.check_voice(voice)
            self.check_text(request.text, request.options.with_voice(voice))
        except ProtocolError as exc:
            self._error(exc.code, exc.message, rid)
            return
        if rid is None:
            rid = self._unique_id()
            request = request.with_request_id(rid)
        self._seen_ids[rid] = None
        while len(self._seen_ids) > self.max_remembered_ids:
            self._seen_ids.popitem(last=False)
        self._queue.append(request)

    def _in_use(self, rid: str) -> bool:
        """Seen recently, queued or running (a forgotten id of a live request is still refused)."""
        if rid in self._seen_ids:
            return True
        running = self._running is not None and self._running.request_id == rid
        return running or any(queued.request_id == rid for queued in self._queue)

    def _unique_id(self) -> str:
        while True:
            rid = self.new_request_id()
            if not self._in_use(rid):
                return rid
            rid = f"{rid}-{next(self._counter)}"
            if not self._in_use(rid):
                return rid

    def _cancel(self, request_id: str | None) -> None:
        matched = False
        kept: deque[Synthesize] = deque()
        for queued in self._queue:
            if request_id is None or queued.request_id == request_id:
                matched = True
                assert queued.request_id is not None
                self._emit(SynthesisCancelled(request_id=queued.request_id))
            else:
                kept.append(queued)
        self._queue = kept
        running = self._running
        if running is not None and (request_id is None or running.request_id == request_id):
            running.cancelled = True
            matched = True
        if not matched and request_id is not None:
            self._error(
                TtsErrorCode.UNKNOWN_REQUEST,
                f"no queued or running request has id {request_id!r} (it may have finished already)",
                request_id,
            )
        self._maybe_close()

    # --- admission ----------------------------------------------------------------------------------------

    def wait_for_admission(self, *, position: int, max_wait_s: float) -> None:
        """The instance is full: queue ``queued`` (first thing sent) and hold every request until :meth:`admit`."""
        if self._out or self.has_pending_work or not self.admitted or self.state is not SessionState.OPEN:
            raise SessionStateError("wait_for_admission must come first, before any frame of the session")
        self.admitted = False
        self._max_wait_s = round(max_wait_s, 3)
        self._emit(SessionQueued(position=position, max_wait_s=self._max_wait_s))

    def still_waiting(self, *, position: int) -> None:
        """Queue ``queued`` again with the session's place now (every ``QUEUED_REPEAT_S`` while it waits)."""
        if self.admitted:
            raise SessionStateError("still_waiting() of a session that is not waiting: call wait_for_admission first")
        if self.state is not SessionState.CLOSED:
            self._emit(SessionQueued(position=position, max_wait_s=self._max_wait_s))

    def admit(self, *, waited_s: float) -> None:
        """A slot freed for this waiting session: ``admitted``; :meth:`next_request` starts its requests now."""
        if self.admitted:
            raise SessionStateError("admit() of a session that was not waiting: call wait_for_admission first")
        self.admitted = True
        if self.state is not SessionState.CLOSED:
            self._emit(SessionAdmitted(waited_s=round(waited_s, 3)))

    def refuse_at_capacity(self, *, waited_s: float) -> None:
        """The wait's bound passed with no free slot: one session-level ``error`` ``at_capacity`` ends every
        request held, and the session closes (:attr:`should_close`)."""
        if self.admitted:
            raise SessionStateError("refuse_at_capacity() of a session that was not waiting")
        if self.state is SessionState.CLOSED:
            return
        self._queue.clear()
        self._emit(
            TtsFailed(
                code=TtsErrorCode.AT_CAPACITY.value,
                message=f"every slot of this instance stayed taken for {waited_s:.0f} s: "
                "try again in a little while (the service is scaling) or on another instance",
                rejected=False,
            )
        )
        self.state = SessionState.CLOSED

    # --- synthesis driving ---------------------------------------------------------------------------------

    def next_request(self) -> Synthesize | None:
        """Start the next queued request (emits ``synthesis_start``) or return None when idle.

        The returned request always has ``request_id`` and ``options.voice`` filled in."""
        if self._running is not None:
            raise SessionStateError(
                f"request {self._running.request_id!r} is still running: call finish_request or fail_request first"
            )
        if self.state is SessionState.CLOSED or not self.admitted or not self._queue:
            return None
        request = self._queue.popleft()
        options = request.options.with_voice(request.options.voice or self.default_voice)
        request = replace(request, options=options)
        running = RunningRequest(request=request)
        self._running = running
        self._emit(SynthesisStart(request_id=running.request_id, options=options, characters=len(request.text)))
        return request

    def is_cancelled(self, request_id: str) -> bool:
        """True when the running request was cancelled: stop at this segment boundary."""
        running = self._require_running(request_id)
        return running.cancelled

    def send_audio(self, request_id: str, pcm: bytes) -> None:
        """Queue one segment's PCM (s16le) as a binary frame. Ignored (not sent) once the request is cancelled."""
        running = self._require_running(request_id)
        try:
            piece = AudioPiece.pcm(pcm, running.samples)
        except AudioFormatError as exc:
            raise SessionStateError(
                f"PCM must hold whole s16le samples (an even number of bytes): {exc.message}"
            ) from exc
        if running.cancelled or not pcm:
            return
        running.segments += 1
        running.audio_bytes += len(piece.data)
        running.samples = piece.end_sample
        self._out.append(piece.data)

    def send_word_timings(self, request_id: str, timings: WordTimings) -> None:
        """Queue a ``word_timings`` message of the running request (a request that asked for timings): send it
        before the PCM of the words it times. Ignored once the request is cancelled."""
        running = self._require_running(request_id)
        if timings.request_id != request_id:
            raise SessionStateError(
                f"word_timings of request {timings.request_id!r} sent while {request_id!r} runs: time its own words"
            )
        if running.cancelled or not timings.words:
            return
        self._emit(timings)

    def finish_request(self, request_id: str, *, elapsed_s: float, first_audio_s: float | None) -> None:
        """End the running request: ``synthesis_complete``, or ``synthesis_cancelled`` if it was cancelled."""
        running = self._require_running(request_id)
        self._running = None
        if running.cancelled:
            self._emit(SynthesisCancelled(request_id=request_id, audio_bytes=running.audio_bytes))
        else:
            self._emit(
                SynthesisComplete(
                    request_id=request_id,
                    total_duration_s=round(running.samples / CODECS[Codec.PCM_S16LE].sample_rate, 4),
                    elapsed_s=round(elapsed_s, 4),
                    segments=running.segments,
                    audio_bytes=running.audio_bytes,
                    first_audio_s=None if first_audio_s is None else round(first_audio_s, 4),
                )
            )
        self._maybe_close()

    def fail_request(self, request_id: str, *, code: str, message: str) -> None:
        """End the running request with an ``error``; the session goes on with the next one."""
        self._require_running(request_id)
        self._running = None
        self._emit(TtsFailed(code=str(code), message=message, request_id=request_id, rejected=False))
        self._maybe_close()

    def _require_running(self, request_id: str) -> RunningRequest:
        running = self._running
        if running is None or running.request_id != request_id:
            raise SessionStateError(f"request {request_id!r} is not the running request: call next_request first")
        return running

    # --- output --------------------------------------------------------------------------------------------

    def data_to_send(self) -> list[Frame]:
        """Frames to send now, in order; each call returns only new frames."""
        out, self._out = self._out, []
        return out

    @property
    def has_pending_work(self) -> bool:
        """A request is running or queued."""
        return self._running is not None or bool(self._queue)

    @property
    def running_request_id(self) -> str | None:
        return None if self._running is None else self._running.request_id

    @property
    def queued_count(self) -> int:
        return len(self._queue)

    @property
    def should_close(self) -> bool:
        """True once ``close`` was received and everything queued has ended: close with :attr:`close_code`."""
        return self.state is SessionState.CLOSED

    @property
    def close_code(self) -> int:
        return NORMAL_CLOSURE

    def _maybe_close(self) -> None:
        if self.state is SessionState.CLOSING and not self.has_pending_work:
            self.state = SessionState.CLOSED

    def _error(self, code: str, message: str, request_id: str | None) -> None:
        """Refuse one client frame: an ``error`` with ``rejected`` true (no request changed state)."""
        self._emit(TtsFailed(code=str(code), message=message, request_id=request_id, rejected=True))

    def _emit(self, message: ServerMessage) -> None:
        self._out.append(serialize(message))
