"""The rules of one agent turn (ARCHITECTURE §3), as a sans-I/O state machine: facts in, agent events out.

The voice agent's asyncio code reports what happened — a text delta, a sentence handed to the TTS, audio, a
failure, a cancel — and sends exactly the events this machine returns, in the order it returns them. The rules
live here, so they are tested without a socket, a model or an event loop:

- ``agent_start`` comes first (:meth:`AgentTurn.start`), and nothing comes before it;
- each stream has its own ``seq``: ``text_delta`` 0, 1, 2, ...; ``audio_chunk`` 0, 1, 2, ...;
- ``audio_stream_start`` comes once, before the first ``audio_chunk``, and names the voice the TTS announced;
  audio is cut into chunks of at most ``audio_chunk_bytes`` of PCM, on sample boundaries; an Opus turn (an
  ``encoder``) sends the encoder's whole packets as soon as it makes them, in chunks of at most that many bytes,
  each saying how many timeline samples it covers (:class:`~relay_core.packet_timeline.PacketTimeline`);
- ``speech_waiting`` (the TTS session waits in the service's queue) comes at most once, and only before any audio;
- after :meth:`AgentTurn.cancel` no text and no audio is emitted any more;
- :meth:`AgentTurn.finish` emits ``audio_stream_end`` (if audio started) and then exactly one terminal event;
  after it the machine refuses every call with :class:`~relay_core.errors.SessionStateError`;
- which outcome wins, when several happened: a cancel (``agent_end`` ``cancelled``) > an internal error >
  the model's failure (``model_failed``) > the TTS session's failure (``tts_unavailable`` / ``tts_failed``) >
  sentences the TTS could not speak (``tts_failed``, counting them) > ``agent_end`` ``completed``. Within one
  kind, the first failure reported wins.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from relay_core.agent.events import (
    AgentEnd,
    AgentErrorCode,
    AgentFailed,
    AgentStart,
    AudioChunk,
    AudioStreamEnd,
    AudioStreamStart,
    SpeechWaiting,
    TextDelta,
    TurnMode,
    TurnStatus,
)
from relay_core.audio_piece import CODECS, AudioPiece, Codec
from relay_core.errors import SessionStateError
from relay_core.packet_timeline import PacketEncoder, PacketTimeline


class TurnPhase(Enum):
    """NEW: nothing sent yet; RUNNING: ``agent_start`` sent; ENDED: the terminal event was returned."""

    NEW = "new"
    RUNNING = "running"
    ENDED = "ended"


@dataclass(frozen=True, slots=True)
class _Failure:
    code: str
    message: str


@dataclass
class AgentTurn:
    """One turn's state. Drive it from one thread (the agent's event loop)."""

    request_id: str
    audio_chunk_bytes: int
    session_id: str | None = None
    mode: TurnMode = TurnMode.BIDI
    model: str = ""
    clock: Callable[[], float] = time.monotonic
    """Seconds, monotonic; injectable so tests can fix ``first_audio_s`` and ``elapsed_s``."""
    encoder: PacketEncoder | None = None
    """The turn's Opus encoder when the client asked for ``audio: "opus"`` (one continuous stream for the whole
    turn); None: the speech goes out as PCM."""

    phase: TurnPhase = field(default=TurnPhase.NEW, init=False)
    cancelled: bool = field(default=False, init=False)
    text_seq: int = field(default=0, init=False)
    text_chars: int = field(default=0, init=False)
    sentences: int = field(default=0, init=False)
    audio_seq: int = field(default=0, init=False)
    audio_samples: int = field(default=0, init=False)
    """Samples of audio emitted so far: where the next chunk starts on the turn's timeline."""
    audio_started: bool = field(default=False, init=False)
    speech_waited: bool = field(default=False, init=False)
    """``speech_waiting`` was emitted (once per turn)."""
    first_audio_s: float | None = field(default=None, init=False)
    _timeline: PacketTimeline | None = field(default=None, init=False)
    _started_at: float = field(default=0.0, init=False)
    _internal: _Failure | None = field(default=None, init=False)
    _model: _Failure | None = field(default=None, init=False)
    _tts: _Failure | None = field(default=None, init=False)
    _failed_requests: list[_Failure] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        if self.audio_chunk_bytes < CODECS[Codec.PCM_S16LE].cut_unit_bytes():
            raise ValueError(f"audio_chunk_bytes must hold at least one sample; got {self.audio_chunk_bytes}")

    # --- events out ------------------------------------------------------------------------------------------

    def start(self) -> AgentStart:
        """The turn's first event. Call once, before anything else."""
        if self.phase is not TurnPhase.NEW:
            raise SessionStateError(f"turn {self.request_id}: start() was already called; a turn starts once")
        self.phase = TurnPhase.RUNNING
        self._started_at = self.clock()
        return AgentStart(
            request_id=self.request_id, session_id=self.session_id, mode=self.mode.value, model=self.model
        )

    def text(self, delta: str) -> list[TextDelta]:
        """A piece of the reply as the model wrote it: one ``text_delta`` (none if empty or after a cancel)."""
        self._require_running("text")
        if not delta or self.cancelled:
            return []
        event = TextDelta(request_id=self.request_id, seq=self.text_seq, text=delta)
        self.text_seq += 1
        self.text_chars += len(delta)
        return [event]

    def speech_waiting(self, position: int) -> list[SpeechWaiting]:
        """The TTS session waits for a slot of the busy service (its ``queued``): the status a client shows as
        "voice starting…"; nothing after the first, once audio has started, or after a cancel."""
        self._require_running("speech_waiting")
        if self.speech_waited or self.audio_started or self.cancelled:
            return []
        self.speech_waited = True
        return [SpeechWaiting(request_id=self.request_id, position=position)]

    def audio(self, pcm: bytes, voice: str) -> list[AudioStreamStart | AudioChunk]:
        """PCM (s16le, whole samples) the TTS produced, spoken with ``voice``: the events that carry it."""
        self._require_running("audio")
        if self.cancelled or not pcm:
            return []
        events: list[AudioStreamStart | AudioChunk] = []
        if not self.audio_started:
            self.audio_started = True
            self.first_audio_s = self.clock() - self._started_at
            events.append(self._stream_start(voice))
        if self.encoder is not None:
            self.audio_samples = AudioPiece.pcm(pcm, self.audio_samples).end_sample
            events.extend(self._packet_chunks(self.encoder.encode(pcm)))
            return events
        for piece in AudioPiece.pcm(pcm, self.audio_samples).split(self.audio_chunk_bytes):
            events.append(AudioChunk.of_piece(self.request_id, self.audio_seq, piece))
            self.audio_seq += 1
            self.audio_samples = piece.end_sample
        return events

    def _stream_start(self, voice: str) -> AudioStreamStart:
        if self.encoder is None:
            return AudioStreamStart(request_id=self.request_id, voice=voice)
        self._timeline = PacketTimeline(self.encoder.pre_skip, self.encoder.frame_samples)
        return AudioStreamStart(
            request_id=self.request_id,
            voice=voice,
            format=Codec.OPUS.value,
            frame_samples=self.encoder.frame_samples,
            pre_skip=self.encoder.pre_skip,
        )

    def _packet_chunks(self, packets: list[bytes]) -> list[AudioChunk]:
        """Whole packets as chunks of at most ``audio_chunk_bytes`` each (a packet alone may be larger), placed
        on the timeline no further than the samples encoded so far."""
        assert self._timeline is not None
        groups: list[list[bytes]] = []
        size = self.audio_chunk_bytes
        for packet in packets:
            if size + len(packet) > self.audio_chunk_bytes:
                groups.append([])
                size = 0
            groups[-1].append(packet)
            size += len(packet)
        chunks: list[AudioChunk] = []
        for group in groups:
            _start, samples = self._timeline.place(len(group), limit=self.audio_samples)
            chunks.append(AudioChunk.of_packets(self.request_id, self.audio_seq, group, samples))
            self.audio_seq += 1
        return chunks

    def finish(self) -> list[AudioChunk | AudioStreamEnd | AgentEnd | AgentFailed]:
        """The turn is over (its work has stopped): for an Opus turn not cancelled the encoder's last packets (so
        the chunks cover every sample spoken), ``audio_stream_end`` if audio started, then the terminal event."""
        self._require_running("finish")
        self.phase = TurnPhase.ENDED
        events: list[AudioChunk | AudioStreamEnd | AgentEnd | AgentFailed] = []
        if self.audio_started and self.encoder is not None and not self.cancelled:
            events.extend(self._packet_chunks(self.encoder.flush()))
        if self.audio_started:
            events.append(
                AudioStreamEnd(
                    request_id=self.request_id,
                    total_chunks=self.audio_seq,
                    duration_s=round(self.audio_samples / CODECS[Codec.PCM_S16LE].sample_rate, 3),
                )
            )
        events.append(self._terminal())
        return events

    # --- facts in --------------------------------------------------------------------------------------------

    def sentence_sent(self) -> None:
        """A sentence (or, in batch mode, the whole reply) was handed to the TTS session."""
        self._require_running("sentence_sent")
        self.sentences += 1

    def cancel(self) -> None:
        """Barge-in or the caller went away: no more text or audio; the turn ends ``cancelled``. Idempotent."""
        if self.phase is TurnPhase.ENDED:
            return
        self.cancelled = True

    def model_failed(self, message: str) -> None:
        """The model stopped with an error; ``message`` must be fit for the client (no trace, no secrets)."""
        self._require_running("model_failed")
        self._model = self._model or _Failure(AgentErrorCode.MODEL_FAILED.value, message)

    def tts_failed(self, code: AgentErrorCode, message: str) -> None:
        """The TTS session could not be opened or kept (after the one reconnect)."""
        self._require_running("tts_failed")
        self._tts = self._tts or _Failure(code.value, message)

    def request_failed(self, code: str, message: str) -> None:
        """The TTS server could not speak one sentence (its own error code); the session goes on."""
        self._require_running("request_failed")
        self._failed_requests.append(_Failure(code, message))

    def internal_failed(self, message: str) -> None:
        """A bug in the agent stopped the turn's work; ``message`` must be fit for the client."""
        self._require_running("internal_failed")
        self._internal = self._internal or _Failure(AgentErrorCode.INTERNAL.value, message)

    @property
    def ended(self) -> bool:
        return self.phase is TurnPhase.ENDED

    # --- internals -------------------------------------------------------------------------------------------

    def _require_running(self, what: str) -> None:
        if self.phase is TurnPhase.NEW:
            raise SessionStateError(f"turn {self.request_id}: {what}() before start(); call start() first")
        if self.phase is TurnPhase.ENDED:
            raise SessionStateError(f"turn {self.request_id}: {what}() after finish(); the turn is over")

    def _terminal(self) -> AgentEnd | AgentFailed:
        if self.cancelled:
            return self._end(TurnStatus.CANCELLED)
        for failure in (self._internal, self._model):
            if failure is not None:
                return AgentFailed(request_id=self.request_id, code=failure.code, message=failure.message)
        if self._tts is not None:
            return AgentFailed(
                request_id=self.request_id,
                code=self._tts.code,
                message=f"{self._tts.message}. The reply's text was delivered without (all of) its audio.",
            )
        if self._failed_requests:
            first = self._failed_requests[0]
            return AgentFailed(
                request_id=self.request_id,
                code=AgentErrorCode.TTS_FAILED.value,
                message=f"{len(self._failed_requests)} sentence(s) could not be spoken: {first.code}: {first.message}",
            )
        return self._end(TurnStatus.COMPLETED)

    def _end(self, status: TurnStatus) -> AgentEnd:
        return AgentEnd(
            request_id=self.request_id,
            status=status.value,
            text_chars=self.text_chars,
            sentences=self.sentences,
            first_audio_s=None if self.first_audio_s is None else round(self.first_audio_s, 4),
            elapsed_s=round(self.clock() - self._started_at, 4),
        )


__all__ = ["AgentTurn", "TurnPhase"]
