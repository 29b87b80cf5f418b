"""Client side of a TTS session, sans-I/O: what the voice agent (or any client) uses to talk to the container.

Outgoing: :meth:`TtsClientSession.synthesize`, :meth:`cancel`, :meth:`close` return the frame to send (a JSON text
frame; send it as binary where the transport requires, the server accepts both). Incoming: hand every received
frame to :meth:`receive_frame`, which returns typed events. Binary frames are attributed to the request most
recently started (the server is sequential per session); PCM split by a transport at an odd byte is reassembled
so that every :class:`AudioReceived` holds whole samples, as an :class:`~relay_core.audio_piece.AudioPiece` placed
on the session's sample timeline (every sample received, in order, across its requests).

A session the instance cannot serve yet is told so in-band: :class:`SessionWaiting` (the server's ``queued``),
then :class:`SessionStarted` (``admitted``) when a slot frees, or :class:`SessionAtCapacity` (the session-level
``error`` ``at_capacity``) when the wait's bound passed, followed by a :class:`RequestEnded` for every request
still pending (each failed ``at_capacity``), so a client that waits for its requests' ends needs nothing more.
Requests may be sent while waiting: the server keeps them and runs them once admitted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from relay_core.audio_piece import CODECS, AudioPiece, Codec
from relay_core.errors import ProtocolError
from relay_core.tts.messages import (
    Cancel,
    Close,
    SessionAdmitted,
    SessionQueued,
    SynthesisCancelled,
    SynthesisComplete,
    SynthesisStart,
    Synthesize,
    TtsErrorCode,
    TtsFailed,
    parse_server_message,
    serialize,
)
from relay_core.word_timings import WordTimings


@dataclass(frozen=True, slots=True)
class RequestStarted:
    """The server began a request."""

    message: SynthesisStart


@dataclass(frozen=True, slots=True)
class AudioReceived:
    """Audio (s16le PCM, whole samples) of the running request, placed on the session's sample timeline."""

    request_id: str
    piece: AudioPiece

    @property
    def pcm(self) -> bytes:
        """The piece's PCM bytes."""
        return self.piece.data


@dataclass(frozen=True, slots=True)
class TimingsReceived:
    """A ``word_timings`` message of the running request (times on that request's audio timeline)."""

    timings: WordTimings


@dataclass(frozen=True, slots=True)
class RequestEnded:
    """A request ended: completed, cancelled, or failed (``error`` with its request id)."""

    request_id: str
    outcome: SynthesisComplete | SynthesisCancelled | TtsFailed


@dataclass(frozen=True, slots=True)
class FrameRefused:
    """An ``error`` that ends no request: a refused frame that names no pending request, or one that repeated
    the id of a request still queued or running (which goes on and ends on its own). The session goes on."""

    error: TtsFailed


@dataclass(frozen=True, slots=True)
class SessionWaiting:
    """The instance is full: the session waits in its admission queue (``queued``); requests sent are kept."""

    message: SessionQueued


@dataclass(frozen=True, slots=True)
class SessionStarted:
    """A waiting session got its slot (``admitted``): its requests start now."""

    message: SessionAdmitted


@dataclass(frozen=True, slots=True)
class SessionAtCapacity:
    """The session waited the whole bound without a slot (``error`` ``at_capacity``): it is over; a
    :class:`RequestEnded` follows for every request still pending."""

    error: TtsFailed


TtsClientEvent = (
    RequestStarted
    | AudioReceived
    | TimingsReceived
    | RequestEnded
    | FrameRefused
    | SessionWaiting
    | SessionStarted
    | SessionAtCapacity
)


@dataclass
class TtsClientSession:
    """Tracks requests of one TTS session from the client's side. Not thread-safe."""

    pending: list[str] = field(default_factory=list, init=False)
    """Ids of requests sent and not yet ended, in order."""
    current: str | None = field(default=None, init=False)
    samples: int = field(default=0, init=False)
    """Samples of audio received so far in this session: where the next piece starts."""
    waiting: bool = field(default=False, init=False)
    """The session is in the instance's admission queue (between ``queued`` and ``admitted``)."""
    _odd_byte: bytes = field(default=b"", init=False)

    def synthesize(self, request: Synthesize) -> str:
        """The frame for a synthesize request. ``request.request_id`` is required on the client side so that
        every reply can be matched."""
        if request.request_id is None:
            raise ProtocolError("give each synthesize request a request_id on the client side")
        self.pending.append(request.request_id)
        return serialize(request)

    def cancel(self, request_id: str | None = None) -> str:
        """The frame that cancels one request, or all when ``request_id`` is None."""
        return serialize(Cancel(request_id=request_id))

    def close(self) -> str:
        """The frame that asks the server to finish the queue and close with 1000."""
        return serialize(Close())

    @property
    def idle(self) -> bool:
        """Every request sent has ended."""
        return not self.pending

    def receive_frame(self, data: str | bytes) -> list[TtsClientEvent]:
        """Events for one server frame. Raises ``ProtocolError`` for a frame that breaks the protocol."""
        if isinstance(data, bytes):
            return self._audio(data)
        message = parse_server_message(data)
        if isinstance(message, SessionQueued):
            self.waiting = True
            return [SessionWaiting(message)]
        if isinstance(message, SessionAdmitted):
            self.waiting = False
            return [SessionStarted(message)]
        if isinstance(message, TtsFailed) and message.code == TtsErrorCode.AT_CAPACITY and message.request_id is None:
            return self._at_capacity(message)
        if isinstance(message, SynthesisStart):
            self._odd_byte = b""
            self.current = message.request_id
            return [RequestStarted(message)]
        if isinstance(message, WordTimings):
            if message.request_id != self.current:
                raise ProtocolError(
                    f"word_timings for request {message.request_id[:40]!r} arrived while "
                    f"{str(self.current)[:40]!r} runs: the server must time the running request's words"
                )
            return [TimingsReceived(message)]
        if isinstance(message, TtsFailed) and (
            message.request_id not in self.pending or self._rejects_a_live_id(message)
        ):
            return [FrameRefused(message)]
        assert message.request_id is not None
        if message.request_id in self.pending:
            self.pending.remove(message.request_id)
        if self.current == message.request_id:
            self.current = None
            self._odd_byte = b""
        return [RequestEnded(request_id=message.request_id, outcome=message)]

    def _at_capacity(self, error: TtsFailed) -> list[TtsClientEvent]:
        """The session is over: every pending request ends with the session's error."""
        self.waiting = False
        ended, self.pending, self.current = self.pending, [], None
        events: list[TtsClientEvent] = [SessionAtCapacity(error)]
        for rid in ended:
            events.append(RequestEnded(request_id=rid, outcome=TtsFailed(error.code, error.message, rid)))
        return events

    def _rejects_a_live_id(self, error: TtsFailed) -> bool:
        """A refused frame that repeated the id of a request still live (sent twice, or the running one): the
        latest copy is forgotten and the live request is left alone."""
        rid = error.request_id
        if not error.rejected or rid is None:
            return False
        if self.pending.count(rid) > 1:
            del self.pending[len(self.pending) - 1 - self.pending[::-1].index(rid)]
            return True
        return self.current == rid

    def _audio(self, data: bytes) -> list[TtsClientEvent]:
        if self.current is None:
            raise ProtocolError("audio arrived with no request running: the server must send synthesis_start first")
        data = self._odd_byte + data
        whole = CODECS[Codec.PCM_S16LE].whole_bytes(len(data))
        self._odd_byte = data[whole:]
        if not whole:
            return []
        piece = AudioPiece.pcm(data[:whole], self.samples)
        self.samples = piece.end_sample
        return [AudioReceived(request_id=self.current, piece=piece)]
