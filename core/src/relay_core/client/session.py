"""The client side of the client protocol (§4) as a sans-I/O state machine: messages in, typed events out.

A client (``relay chat``, the smoke test, tests; the web client mirrors it in JS) owns one
:class:`ClientSession` for as long as the user talks, across reconnects, and does three things:

1. sends what :meth:`ClientSession.send_message` / :meth:`cancel` / :meth:`new_conversation` return;
2. hands every text frame it receives to :meth:`ClientSession.receive` and acts on the events it returns
   (show :class:`TextReceived`, play :class:`AudioReceived` PCM (an Opus turn: decode :class:`OpusReceived`),
   caption with :class:`WordsReceived` when the turn asked for timings, stop at :class:`TurnEnded`);
3. after a reconnect (or on :class:`GapDetected`) sends what :meth:`ClientSession.resume_all` returns.

Guarantees: per turn, text and audio events come out exactly once and in ``seq`` order whatever the gateway
repeats (a duplicate gives :class:`DuplicateIgnored`); a message after a missing one is not applied (one
:class:`GapDetected` per gap) and the turn's ``resume`` asks for everything after the last message applied, so
resending it fills the gap with nothing lost or repeated. Malformed input raises ``ProtocolError`` and changes
nothing; misuse (resuming a finished turn, reusing a turn id) raises ``SessionStateError`` saying what to do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from relay_core import limits
from relay_core.agent.events import (
    AgentEnd,
    AgentFailed,
    AgentStart,
    AudioChunk,
    AudioStreamEnd,
    AudioStreamStart,
    SpeechWaiting,
    TextDelta,
    TurnMode,
)
from relay_core.audio_piece import AudioChoice, AudioPiece, Codec
from relay_core.client.messages import (
    Cancel,
    ClientErrorCode,
    ConversationStarted,
    NewConversation,
    Rejection,
    Resume,
    SendMessage,
    TurnAccepted,
    check_turn_id,
    new_turn_id,
    serialize,
)
from relay_core.client.turn_messages import TurnMessage, parse_server_message
from relay_core.close_codes import MESSAGE_TOO_BIG
from relay_core.errors import AudioFormatError, InvalidFieldError, LimitExceededError, ProtocolError, SessionStateError
from relay_core.speech_options import DEFAULT_SPEECH, SpeechOptions
from relay_core.word_timings import WordTiming, WordTimings, apply_word_timings

STALL_RESUME_S = 10.0
"""A client that hears nothing for this long about an accepted, unfinished turn, on a socket still open, sends
that turn's :meth:`ClientSession.resume` on the same connection. A message the relay could not post (after its
retries) stays in the relay's resume buffer, and the relay waits for a resume while the client lacks one; a
resume on a healthy turn is harmless (``turn_accepted``, then nothing already held is repeated)."""


class TurnPhase(StrEnum):
    """Where a turn stands as the client sees it."""

    SENT = "sent"
    """``sendMessage`` went out; no message of the turn has come back yet."""
    ACTIVE = "active"
    """Accepted or streaming; its terminal message has not been applied yet."""
    ENDED = "ended"
    """Finished (see :attr:`ClientTurn.status`); nothing more of it will be applied."""


class TurnOutcome(StrEnum):
    """How a turn ended, as :class:`TurnEnded` reports it."""

    COMPLETED = "completed"
    CANCELLED = "cancelled"
    FAILED = "failed"
    """The turn's terminal ``error`` (``code`` says why)."""
    REJECTED = "rejected"
    """The gateway refused the ``sendMessage`` (e.g. ``rate_limited``); the turn never ran."""
    EXPIRED = "expired"
    """A ``resume`` was refused (``resume_expired`` / ``unknown_turn``): the rest of the turn is lost."""


# --- events ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Accepted:
    """The gateway accepted the turn (``turn_accepted``)."""

    turn_id: str


@dataclass(frozen=True, slots=True)
class TurnStarted:
    """The agent began the turn (``agent_start``)."""

    turn_id: str
    mode: str
    model: str


@dataclass(frozen=True, slots=True)
class TextReceived:
    """The next piece of the reply's text; append it."""

    turn_id: str
    seq: int
    text: str


@dataclass(frozen=True, slots=True)
class AudioStarted:
    """The turn's audio begins; its format holds for every :class:`AudioReceived` of the turn."""

    turn_id: str
    voice: str
    format: str
    sample_rate: int
    channels: int
    frame_samples: int | None = None
    """Opus only: samples each packet decodes to."""
    pre_skip: int | None = None
    """Opus only: decoded samples to drop before the turn's first sample."""


@dataclass(frozen=True, slots=True)
class AudioReceived:
    """The next whole samples of the reply's speech (s16le PCM), starting at sample ``sample_offset``."""

    turn_id: str
    seq: int
    sample_offset: int
    pcm: bytes

    @property
    def piece(self) -> AudioPiece:
        """This audio as a piece of the turn's sample timeline (``end_sample`` is where the next one starts)."""
        return AudioPiece.pcm(self.pcm, self.sample_offset)


@dataclass(frozen=True, slots=True)
class OpusReceived:
    """The next whole packets of an Opus turn's speech: decoded in order by the turn's one decoder, they give the
    turn's samples ``[sample_offset, sample_offset + samples)`` (decoding is the app's job: drop the stream's first
    ``pre_skip`` samples, stop at ``total_samples``; ``relay_cli.opus_decode`` does it with PyAV)."""

    turn_id: str
    seq: int
    sample_offset: int
    samples: int
    packets: tuple[bytes, ...]

    @property
    def piece(self) -> AudioPiece:
        """These packets as one uncut piece of the turn's timeline (``end_sample`` is where the next one starts)."""
        return AudioPiece(Codec.OPUS, b"".join(self.packets), self.sample_offset, self.samples)


@dataclass(frozen=True, slots=True)
class WordsReceived:
    """When the next words of the reply are spoken (a turn sent with ``timings=True``): seconds on the turn's audio
    timeline, where sample ``n`` of the turn's audio plays at ``n / sample_rate``. They come before their audio.

    A word with ``final`` false is an estimate that a later event replaces: ``index`` (when set) is where these
    words go among the turn's words, replacing those from there on; :attr:`ClientTurn.words` already holds the
    result."""

    turn_id: str
    seq: int
    words: tuple[WordTiming, ...]
    index: int | None = None


@dataclass(frozen=True, slots=True)
class SpeechWaitingReceived:
    """The turn's speech waits in line for the busy speech service (``speech_waiting``): show "voice starting…"
    until its audio starts (or the turn ends ``tts_at_capacity``)."""

    turn_id: str
    seq: int
    position: int


@dataclass(frozen=True, slots=True)
class AudioEnded:
    """The turn's audio is complete."""

    turn_id: str
    total_samples: int
    duration_s: float


@dataclass(frozen=True, slots=True)
class TurnEnded:
    """The turn is over; ``code`` and ``message`` are set when it failed, was rejected or expired."""

    turn_id: str
    outcome: TurnOutcome
    code: str | None = None
    message: str | None = None
    agent_first_audio_s: float | None = None
    """The agent's own time to first audio (``agent_end.first_audio_s``: from the agent taking the turn to its first
    audio); a client's time to first audio minus this is what the path between them added."""


@dataclass(frozen=True, slots=True)
class Rejected:
    """The gateway refused one client message (``error`` without ``seq``); the connection is still usable."""

    code: str
    message: str
    turn_id: str | None = None


@dataclass(frozen=True, slots=True)
class GapDetected:
    """A message of the turn is missing (``expected_seq`` never came; ``received_seq`` did). Later messages are
    held back until the gap is filled: send :meth:`ClientSession.resume` for the turn."""

    turn_id: str
    expected_seq: int
    received_seq: int


@dataclass(frozen=True, slots=True)
class NewConversationStarted:
    """The gateway started the fresh conversation :meth:`ClientSession.new_conversation` asked for
    (``conversation_started``): the next ``sendMessage`` begins it."""


@dataclass(frozen=True, slots=True)
class DuplicateIgnored:
    """A message the client already has came again (e.g. in a resume replay); nothing was applied."""

    turn_id: str
    seq: int


ClientEvent = (
    Accepted
    | TurnStarted
    | TextReceived
    | AudioStarted
    | AudioReceived
    | OpusReceived
    | WordsReceived
    | AudioEnded
    | TurnEnded
    | Rejected
    | GapDetected
    | DuplicateIgnored
    | NewConversationStarted
    | SpeechWaitingReceived
)


# --- per-turn state ------------------------------------------------------------------------------------------


@dataclass
class ClientTurn:
    """What the client holds of one turn."""

    turn_id: str
    phase: TurnPhase = TurnPhase.SENT
    last_seq: int = -1
    """The last seq applied; every message up to it was applied exactly once (-1: none yet)."""
    outcome: TurnOutcome | None = None
    error_code: str | None = None
    samples: int = 0
    """Samples of audio applied so far."""
    sample_rate: int = limits.SAMPLE_RATE
    gap_reported: bool = False
    resume_pending: bool = False
    words: list[WordTiming] = field(default_factory=list, repr=False)
    """Every word timing applied so far, in spoken order (empty unless the turn asked for timings): the best known,
    later messages replacing estimates (``relay_core.word_timings.apply_word_timings``)."""
    _text: list[str] = field(default_factory=list, repr=False)
    _pcm: bytearray | None = field(default=None, repr=False)
    packets: list[bytes] = field(default_factory=list, repr=False)
    """An Opus turn's packets received so far, in order (only when the session collects audio)."""
    codec: Codec = Codec.PCM_S16LE
    """What the turn's audio travels as (``audio_stream_start``'s ``format``)."""

    @property
    def text(self) -> str:
        """The reply's text received so far."""
        return "".join(self._text)

    @property
    def pcm(self) -> bytes:
        """The reply's audio received so far (only when the session collects audio; else empty)."""
        return bytes(self._pcm) if self._pcm is not None else b""

    @property
    def finished(self) -> bool:
        return self.phase is TurnPhase.ENDED


@dataclass
class ClientSession:
    """The client's view of every turn it started or received. Not thread-safe; no I/O.

    ``collect_audio``: keep each turn's PCM in :attr:`ClientTurn.pcm` (CLI, tests) besides emitting it.
    ``max_send_bytes``: the largest message :meth:`send_message` builds. API Gateway closes the connection (1009)
    on a frame over 32 KB and most WebSocket clients (browsers included) send a message as one frame, so the
    default is ``limits.APIGW_FRAME_BYTES``; raise it to ``limits.CLIENT_MESSAGE_MAX_BYTES`` only with a client
    that fragments messages into frames of at most 32 KB."""

    collect_audio: bool = False
    max_send_bytes: int = limits.APIGW_FRAME_BYTES
    _turns: dict[str, ClientTurn] = field(default_factory=dict, init=False)
    _forgotten: set[str] = field(default_factory=set, init=False)
    conversation_pending: bool = field(default=False, init=False)
    """A ``newConversation`` went out and its ``conversation_started`` has not come back: hold the next
    ``sendMessage`` until it does (it could otherwise reach the old conversation); after a reconnect, send
    :meth:`new_conversation` again (a second one is harmless)."""

    # --- outgoing --------------------------------------------------------------------------------------------

    def send_message(
        self,
        prompt: str,
        *,
        options: SpeechOptions = DEFAULT_SPEECH,
        mode: TurnMode = TurnMode.BIDI,
        turn_id: str | None = None,
        timings: bool = False,
        audio: AudioChoice = AudioChoice.PCM,
    ) -> str:
        """The ``sendMessage`` to send for a new turn. A turn id is chosen when none is given, so the turn can
        be resumed even if the connection drops before ``turn_accepted``. ``timings``: ask for the reply's word
        timings (:class:`WordsReceived` events). ``audio``: PCM (the default) or Opus packets. Raises
        ``ProtocolError`` for invalid fields (``LimitExceededError`` for a message over ``max_send_bytes``) and
        ``SessionStateError`` for a turn id already used in this session; nothing is recorded then."""
        tid = turn_id if turn_id is not None else new_turn_id()
        if tid in self._turns or tid in self._forgotten:
            raise SessionStateError(f"turn id {tid!r} is already used in this session: use a new one per turn")
        text = serialize(SendMessage(prompt, options=options, mode=mode, turn_id=tid, timings=timings, audio=audio))
        size = len(text.encode("utf-8"))
        if size > self.max_send_bytes:
            raise LimitExceededError(
                f"this sendMessage is {size} bytes; one WebSocket frame to the gateway holds {self.max_send_bytes}: "
                "shorten the prompt"
            )
        self._turns[tid] = self._new_turn(tid)
        return text

    def cancel(self, turn_id: str | None = None, *, played_ms: int | None = None) -> str:
        """The ``cancel`` to send (``turn_id`` None: the running turn). The turn ends when its terminal
        message (``agent_end`` with status ``cancelled``) arrives. ``played_ms``: how much of the turn's audio
        the listener heard, so the agent remembers only the words heard (None: it remembers the whole reply)."""
        return serialize(Cancel(turn_id, played_ms=played_ms))

    def new_conversation(self) -> str:
        """The ``newConversation`` to send: the user's next turns start a conversation the agent has no history
        of. Send the next ``sendMessage`` once :class:`NewConversationStarted` came (:attr:`conversation_pending`
        is then False)."""
        self.conversation_pending = True
        return serialize(NewConversation())

    def resume(self, turn_id: str) -> str:
        """The ``resume`` to send for an unfinished turn: everything after its last applied seq."""
        turn = self._turns.get(turn_id)
        if turn is None:
            raise SessionStateError(f"no turn {turn_id!r} in this session: resume only turns you started or received")
        if turn.finished:
            raise SessionStateError(f"turn {turn_id!r} already ended ({turn.outcome}): there is nothing to resume")
        turn.resume_pending = True
        return serialize(Resume(turn_id, turn.last_seq))

    def resume_all(self) -> list[str]:
        """A ``resume`` for every unfinished turn: send them on a new connection after a reconnect."""
        return [self.resume(turn.turn_id) for turn in self.unfinished_turns]

    def closed_too_big(self, turn_id: str, size_bytes: int) -> list[ClientEvent]:
        """End a turn whose ``sendMessage`` (``size_bytes`` of UTF-8) the gateway closed the connection over
        (``close_codes.MESSAGE_TOO_BIG``): the gateway never ran it, and resuming or sending it again would only be
        closed the same way. Its :class:`TurnEnded` (outcome rejected, code ``limit_exceeded``), or nothing for a
        turn this session does not hold unfinished. The web client's ``closedTooBig`` says the same."""
        turn = self._turns.get(turn_id)
        if turn is None or turn.finished:
            return []
        message = (
            f"the gateway closed the connection ({MESSAGE_TOO_BIG}, message too big) over this turn's "
            f"{size_bytes}-byte sendMessage; API Gateway takes at most {limits.APIGW_FRAME_BYTES} bytes in one "
            "WebSocket frame: shorten the prompt"
        )
        return [self._end(turn, TurnOutcome.REJECTED, ClientErrorCode.LIMIT_EXCEEDED, message)]

    # --- state -----------------------------------------------------------------------------------------------

    def turn(self, turn_id: str) -> ClientTurn:
        """The state of one turn; raises ``SessionStateError`` for a turn this session never saw."""
        try:
            return self._turns[turn_id]
        except KeyError:
            raise SessionStateError(f"no turn {turn_id!r} in this session") from None

    def forget(self, turn_id: str) -> ClientTurn:
        """Drop a finished turn's text and audio (long sessions); returns its final state. Messages of it that
        still arrive (late duplicates) are ignored. Raises ``SessionStateError`` for an unfinished turn."""
        turn = self.turn(turn_id)
        if not turn.finished:
            raise SessionStateError(f"turn {turn_id!r} has not ended: forget a turn only after its TurnEnded")
        del self._turns[turn_id]
        self._forgotten.add(turn_id)
        return turn

    @property
    def turns(self) -> list[ClientTurn]:
        """Every turn, oldest first."""
        return list(self._turns.values())

    @property
    def unfinished_turns(self) -> list[ClientTurn]:
        return [turn for turn in self._turns.values() if not turn.finished]

    # --- incoming --------------------------------------------------------------------------------------------

    def receive(self, data: str | bytes) -> list[ClientEvent]:
        """Apply one gateway message (a text frame; bytes are decoded as UTF-8). Returns the events it causes,
        in order. Raises ``ProtocolError`` for a malformed message, leaving the state unchanged."""
        message = parse_server_message(data)
        if isinstance(message, TurnAccepted):
            return self._on_accepted(message)
        if isinstance(message, Rejection):
            return self._on_rejected(message)
        if isinstance(message, ConversationStarted):
            self.conversation_pending = False
            return [NewConversationStarted()]
        return self._on_turn_message(message)

    def _new_turn(self, turn_id: str) -> ClientTurn:
        return ClientTurn(check_turn_id(turn_id), _pcm=bytearray() if self.collect_audio else None)

    def _turn_for(self, turn_id: str) -> ClientTurn:
        turn = self._turns.get(turn_id)
        if turn is None:  # a turn started elsewhere (e.g. before an app restart): follow it from here
            turn = self._turns[turn_id] = self._new_turn(turn_id)
        return turn

    def _on_accepted(self, message: TurnAccepted) -> list[ClientEvent]:
        if message.turn_id in self._forgotten:
            return []
        turn = self._turn_for(message.turn_id)
        if turn.phase is TurnPhase.SENT:
            turn.phase = TurnPhase.ACTIVE
        turn.resume_pending = False  # a resume is answered with turn_accepted before its replay
        return [Accepted(message.turn_id)]

    def _on_rejected(self, message: Rejection) -> list[ClientEvent]:
        events: list[ClientEvent] = [Rejected(message.code, message.message, message.turn_id)]
        turn = self._turns.get(message.turn_id) if message.turn_id else None
        if turn is None or turn.finished:
            return events
        lost = message.code in (ClientErrorCode.RESUME_EXPIRED, ClientErrorCode.UNKNOWN_TURN)
        if turn.resume_pending and lost:
            events.append(self._end(turn, TurnOutcome.EXPIRED, message.code, message.message))
        elif turn.phase is TurnPhase.SENT and not turn.resume_pending and not lost:
            events.append(self._end(turn, TurnOutcome.REJECTED, message.code, message.message))
        return events

    def _on_turn_message(self, message: TurnMessage) -> list[ClientEvent]:
        if message.turn_id in self._forgotten:
            return [DuplicateIgnored(message.turn_id, message.seq)]
        turn = self._turn_for(message.turn_id)
        if message.seq <= turn.last_seq:
            return [DuplicateIgnored(turn.turn_id, message.seq)]
        if turn.finished:
            raise ProtocolError(
                f"message {message.seq} of turn {turn.turn_id!r} came after its terminal message {turn.last_seq}"
            )
        if message.seq > turn.last_seq + 1:
            if turn.gap_reported:
                return []
            turn.gap_reported = True
            return [GapDetected(turn.turn_id, turn.last_seq + 1, message.seq)]
        event = self._apply(turn, message)
        turn.last_seq = message.seq
        turn.gap_reported = False
        turn.resume_pending = False
        if turn.phase is TurnPhase.SENT:
            turn.phase = TurnPhase.ACTIVE
        return [event]

    def _apply(self, turn: ClientTurn, message: TurnMessage) -> ClientEvent:
        """The event for the next message of ``turn``; raises before changing anything if it is inconsistent."""
        tid, seq, event = turn.turn_id, message.seq, message.event
        if isinstance(event, TextDelta):
            turn._text.append(event.text)
            return TextReceived(tid, seq, event.text)
        if isinstance(event, AudioChunk):
            return self._apply_audio(turn, seq, event)
        if isinstance(event, WordTimings):
            apply_word_timings(turn.words, event)
            return WordsReceived(tid, seq, event.words, index=event.index)
        if isinstance(event, AgentStart):
            return TurnStarted(tid, event.mode, event.model)
        if isinstance(event, AudioStreamStart):
            turn.sample_rate = event.sample_rate
            turn.codec = Codec.OPUS if event.format == Codec.OPUS.value else Codec.PCM_S16LE
            return AudioStarted(
                tid, event.voice, event.format, event.sample_rate, event.channels, event.frame_samples, event.pre_skip
            )
        if isinstance(event, AudioStreamEnd):
            return AudioEnded(tid, event.total_samples or 0, event.duration_s)
        if isinstance(event, SpeechWaiting):
            return SpeechWaitingReceived(tid, seq, event.position)
        if isinstance(event, AgentEnd):
            outcome = TurnOutcome.CANCELLED if event.status == TurnOutcome.CANCELLED else TurnOutcome.COMPLETED
            return self._end(turn, outcome, None, None, agent_first_audio_s=event.first_audio_s)
        assert isinstance(event, AgentFailed)
        return self._end(turn, TurnOutcome.FAILED, event.code, event.message)

    def _apply_audio(self, turn: ClientTurn, seq: int, event: AudioChunk) -> AudioReceived | OpusReceived:
        if event.codec is not turn.codec:
            raise InvalidFieldError(
                f"audio_chunk {seq} is {event.codec.value} in a {turn.codec.value} stream: an Opus chunk lists its "
                "packet_bytes, a PCM one does not"
            )
        try:
            piece = event.piece(start_sample=turn.samples)
            packets = tuple(event.packets()) if turn.codec is Codec.OPUS else None
        except AudioFormatError as exc:
            raise InvalidFieldError(f"audio_chunk {seq}: {exc.message}") from exc
        if event.sample_offset != piece.start_sample:
            raise InvalidFieldError(
                f"audio_chunk {seq} starts at sample {event.sample_offset}, expected {piece.start_sample}"
            )
        turn.samples = piece.end_sample
        if packets is not None:
            if turn._pcm is not None:
                turn.packets.extend(packets)
            return OpusReceived(turn.turn_id, seq, piece.start_sample, piece.samples, packets)
        if turn._pcm is not None:
            turn._pcm += piece.data
        return AudioReceived(turn.turn_id, seq, piece.start_sample, piece.data)

    @staticmethod
    def _end(
        turn: ClientTurn,
        outcome: TurnOutcome,
        code: str | None,
        message: str | None,
        *,
        agent_first_audio_s: float | None = None,
    ) -> TurnEnded:
        turn.phase = TurnPhase.ENDED
        turn.outcome = outcome
        turn.error_code = code
        turn.resume_pending = False
        return TurnEnded(turn.turn_id, outcome, code, message, agent_first_audio_s)


__all__ = [
    "Accepted",
    "AudioEnded",
    "AudioReceived",
    "AudioStarted",
    "ClientEvent",
    "ClientSession",
    "ClientTurn",
    "DuplicateIgnored",
    "GapDetected",
    "NewConversationStarted",
    "OpusReceived",
    "Rejected",
    "SpeechWaitingReceived",
    "TextReceived",
    "TurnEnded",
    "TurnOutcome",
    "TurnPhase",
    "TurnStarted",
    "WordsReceived",
]
