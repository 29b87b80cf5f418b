"""Re-framing agent events (§3) into the numbered, size-bounded turn messages of the client protocol (§4).

:class:`TurnFramer` is the relay's one tool for this. Guarantees, for any sequence of agent events:

* every returned message is a JSON text whose UTF-8 size is at most ``budget_bytes``
  (default ``limits.CLIENT_FRAME_BUDGET_BYTES``, under API Gateway's 32 KB frame quota);
* messages are numbered by one ``seq`` from 0, contiguous, in the order returned;
* ``audio_chunk`` is cut only where its codec allows (:data:`~relay_core.audio_piece.CODECS`: PCM on whole
  samples, an Opus packet never: an Opus chunk is cut between whole packets, each message listing its packets'
  ``packet_bytes``); the pieces join back to the agent chunk's audio byte for byte, and ``sample_offset`` is each
  piece's start on the turn's sample timeline (for Opus, with ``samples``, placed by
  :class:`~relay_core.packet_timeline.PacketTimeline`, so the pieces tile ``[0, total_samples)``);
* ``text_delta`` longer than the budget is cut on code point boundaries; the pieces join back to the text
  (a lone surrogate, which UTF-8 cannot carry, becomes U+FFFD);
* ``word_timings`` (only in a turn that asked for timings) keeps its words in order, split across as many
  messages as the budget needs, each numbered like any other message (a word longer than a whole message, which
  the agent never sends, is shortened; its times stay); a message's ``index`` moves along with its pieces, so
  applying the pieces in order (``apply_word_timings``) gives what applying the whole message gives;
* exactly one terminal message (``agent_end`` or ``error``) ends the turn: framing anything after it raises
  :class:`~relay_core.errors.SessionStateError`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator

from relay_core import limits
from relay_core.agent.events import (
    AgentEnd,
    AgentEvent,
    AgentFailed,
    AgentStart,
    AudioChunk,
    AudioStreamEnd,
    AudioStreamStart,
    SpeechWaiting,
    TextDelta,
)
from relay_core.audio import max_pcm_bytes_for_base64
from relay_core.audio_piece import AudioPiece, Codec
from relay_core.client.messages import ClientErrorCode, check_turn_id
from relay_core.client.turn_messages import TurnMessage, serialize_turn_message
from relay_core.errors import AudioFormatError, LimitExceededError, RelayError, SessionStateError, UncuttableAudioError
from relay_core.fields import encode_json
from relay_core.packet_timeline import PacketTimeline
from relay_core.word_timings import MAX_WORD_INDEX, WordTiming, WordTimings

_WIDE_INT = 10**15
"""A stand-in for seq/offset values when measuring a message's fixed overhead (wider than any real value)."""
_MIN_BUDGET = 1024
_MAX_ERROR_MESSAGE_CHARS = 1000


def utf8_size(text: str) -> int:
    """Bytes of ``text`` in UTF-8 (what API Gateway counts)."""
    return len(text.encode("utf-8", "surrogatepass"))


_ASCII_JSON_BYTES = tuple(len(json.dumps(chr(code), ensure_ascii=False)) - 2 for code in range(128))
"""Bytes each ASCII character takes inside a JSON string (2 for ``\\n`` or ``\\"``, 6 for ``\\u0001``)."""


def _json_char_bytes(char: str) -> int:
    """UTF-8 bytes ``char`` takes inside a JSON string as ``encode_json`` writes it (non-ASCII is not escaped)."""
    code = ord(char)
    if code < 0x80:
        return _ASCII_JSON_BYTES[code]
    return 2 if code < 0x800 else 3 if code < 0x10000 else 4


def _without_lone_surrogates(text: str) -> str:
    """``text`` with any unpaired surrogate (not encodable in UTF-8) replaced by U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def split_text_to_fit(text: str, room_bytes: int) -> Iterator[str]:
    """Cut ``text`` on code point boundaries into non-empty pieces whose JSON-escaped UTF-8 size is at most
    ``room_bytes`` each; the pieces join back to ``text``. Empty text yields nothing."""
    if room_bytes < 12:  # the widest escaped code point is 6 bytes ("\\u001f"); leave room for two
        raise ValueError(f"room_bytes must be at least 12; got {room_bytes}")
    if utf8_size(json.dumps(text, ensure_ascii=False)) - 2 <= room_bytes:
        if text:
            yield text
        return
    start = 0
    used = 0
    for index, char in enumerate(text):
        cost = _json_char_bytes(char)
        if used + cost > room_bytes:
            yield text[start:index]
            start, used = index, 0
        used += cost
    if start < len(text):
        yield text[start:]


def _base64_size(n_bytes: int) -> int:
    """Characters of the base64 of ``n_bytes`` bytes (padded)."""
    return 4 * -(-n_bytes // 3)


def split_pcm_evenly(pcm: bytes, max_bytes: int) -> list[bytes]:
    """Cut s16le ``pcm`` into as few pieces of at most ``max_bytes`` as possible, of near-equal size in whole
    samples (no tiny tail piece); the pieces join back to ``pcm``. Empty PCM gives one empty piece."""
    return [piece.data for piece in AudioPiece.pcm(pcm).split(max_bytes, even=True)]


def max_audio_pcm_bytes(budget_bytes: int = limits.CLIENT_FRAME_BUDGET_BYTES) -> int:
    """The most PCM bytes (whole samples) that one framed ``audio`` message carries within ``budget_bytes``, for
    any turn id (up to ``limits.MAX_TURN_ID_CHARS``) and any seq, chunk and offset: an agent ``audio_chunk`` of at
    most this much PCM becomes exactly one client message (``relay_core.agent.defaults.AUDIO_CHUNK_BYTES``)."""
    widest = TurnMessage("t" * limits.MAX_TURN_ID_CHARS, _WIDE_INT, AudioChunk("", _WIDE_INT, "", _WIDE_INT))
    return max_pcm_bytes_for_base64(budget_bytes, overhead_bytes=utf8_size(serialize_turn_message(widest)))


class TurnFramer:
    """Numbers and cuts one turn's agent events into client messages. Not thread-safe; one per turn."""

    def __init__(self, turn_id: str, *, budget_bytes: int = limits.CLIENT_FRAME_BUDGET_BYTES) -> None:
        if budget_bytes < _MIN_BUDGET:
            raise ValueError(f"budget_bytes must be at least {_MIN_BUDGET}; got {budget_bytes}")
        self.turn_id = check_turn_id(turn_id)
        self.budget_bytes = budget_bytes
        self.next_seq = 0
        """The seq the next message will carry (so the number of messages framed so far)."""
        self.finished = False
        """True once the terminal message was framed."""
        self.samples = 0
        """Samples of audio framed so far (the next piece's ``sample_offset``)."""
        self.codec = Codec.PCM_S16LE
        """The codec of the turn's audio (``audio_stream_start``'s ``format`` when the table knows it): what the
        framer cuts by."""
        self._packets = PacketTimeline()
        """An Opus turn's packets placed so far on the PCM timeline."""

    @property
    def last_seq(self) -> int:
        """The seq of the last message framed; -1 before the first."""
        return self.next_seq - 1

    # --- public API ------------------------------------------------------------------------------------------

    def frame(self, event: AgentEvent) -> list[str]:
        """The serialized client messages for one agent event, numbered in order, each within the budget.

        Raises ``SessionStateError`` after the terminal message and ``AudioFormatError`` for audio that is not
        whole s16le samples in base64; in both cases nothing is numbered, so the relay can go on with
        :meth:`fail` (e.g. code ``internal_error``) to end the turn cleanly."""
        return [text for _seq, text in self.frame_numbered(event)]

    def frame_numbered(self, event: AgentEvent) -> list[tuple[int, str]]:
        """Like :meth:`frame`, with each message's seq (what :class:`~relay_core.relay.resume_buffer.ResumeBuffer`
        keeps them by)."""
        self._check_open()
        samples_before = self.samples
        packets_before = (self._packets.packets, self._packets.samples)
        try:
            return self._number(self._pieces(event), terminal=isinstance(event, AgentEnd | AgentFailed))
        except RelayError:
            self.samples = samples_before  # nothing of a rejected event counts
            self._packets.packets, self._packets.samples = packets_before
            raise

    def fail(self, code: str | ClientErrorCode, message: str) -> list[str]:
        """End the turn with a terminal ``error`` (e.g. ``agent_unavailable`` when the agent cannot be reached).
        ``message`` should say what the user can do; it is shortened to fit the frame."""
        return [text for _seq, text in self.fail_numbered(code, message)]

    def fail_numbered(self, code: str | ClientErrorCode, message: str) -> list[tuple[int, str]]:
        """Like :meth:`fail`, with the message's seq."""
        return self.frame_numbered(AgentFailed(request_id=self.turn_id, code=str(code), message=message))

    # --- internals -------------------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.finished:
            raise SessionStateError(
                f"turn {self.turn_id!r} already ended (its last seq is {self.last_seq}): start a new TurnFramer"
            )

    def _number(self, events: list[AgentEvent], *, terminal: bool) -> list[tuple[int, str]]:
        out: list[tuple[int, str]] = []
        for offset, event in enumerate(events):
            seq = self.next_seq + offset
            text = serialize_turn_message(TurnMessage(self.turn_id, seq, event))
            size = utf8_size(text)
            if size > self.budget_bytes:  # a bug in the overhead arithmetic: never send an oversize frame
                raise LimitExceededError(f"framed message of {size} bytes exceeds the {self.budget_bytes}-byte budget")
            out.append((seq, text))
        self.next_seq += len(out)
        if terminal:
            self.finished = True
        return out

    def _overhead(self, event: AgentEvent) -> int:
        """Fixed bytes of a message of ``event`` with its variable field empty (numbers as wide as they get)."""
        return utf8_size(serialize_turn_message(TurnMessage(self.turn_id, _WIDE_INT, event)))

    def _pieces(self, event: AgentEvent) -> list[AgentEvent]:
        """The events the client gets for one agent event: the same, or cut to the budget, or with what the
        client wire adds (``sample_offset``, ``total_samples``); long texts and ids shortened to their limits."""
        tid = self.turn_id
        if isinstance(event, WordTimings):
            return self._word_timings_pieces(event)
        if isinstance(event, TextDelta):
            return self._text_pieces(event.text)
        if isinstance(event, AudioChunk):
            return self._audio_pieces(event)
        if isinstance(event, AgentStart):
            return [AgentStart(tid, mode=event.mode, model=event.model[:200])]
        if isinstance(event, AudioStreamStart):
            self.codec = Codec(event.format) if event.format in Codec else Codec.PCM_S16LE
            if self.codec is Codec.OPUS:
                self._packets = PacketTimeline(event.pre_skip or 0, event.frame_samples or limits.OPUS_FRAME_SAMPLES)
            return [
                dataclasses.replace(event, request_id=tid, voice=event.voice[: limits.MAX_VOICE_SPEC_CHARS]),
            ]
        if isinstance(event, AudioStreamEnd):
            return [dataclasses.replace(event, request_id=tid, total_samples=self.samples)]
        if isinstance(event, AgentEnd | SpeechWaiting):
            return [dataclasses.replace(event, request_id=tid)]
        message = _without_lone_surrogates(event.message)[:_MAX_ERROR_MESSAGE_CHARS]
        return [AgentFailed(tid, code=event.code[:64], message=message)]

    def _text_pieces(self, text: str) -> list[AgentEvent]:
        tid = self.turn_id
        text = _without_lone_surrogates(text)
        room = self.budget_bytes - self._overhead(TextDelta(tid, 0, ""))
        pieces = list(split_text_to_fit(text, room)) or [""]
        return [TextDelta(tid, self.next_seq + index, piece) for index, piece in enumerate(pieces)]

    def _word_timings_pieces(self, event: WordTimings) -> list[AgentEvent]:
        """The event's words in as few ``word_timings`` messages as fit the budget (none for no words)."""
        tid = self.turn_id
        room = self.budget_bytes - self._overhead(
            WordTimings(tid, (), index=None if event.index is None else MAX_WORD_INDEX)
        )
        groups: list[list[WordTiming]] = []
        used = room
        for word in event.words:
            fitted = self._fit_word(word, room)
            cost = utf8_size(encode_json(fitted.to_json())) + 1  # the entry and its comma
            if used + cost > room:
                groups.append([])
                used = 0
            groups[-1].append(fitted)
            used += cost
        pieces: list[AgentEvent] = []
        index = event.index
        for group in groups:
            pieces.append(WordTimings(tid, tuple(group), index=index))
            index = None if index is None else index + len(group)
        return pieces

    @staticmethod
    def _fit_word(word: WordTiming, room: int) -> WordTiming:
        """``word`` with its text made UTF-8-safe and, if its entry alone would not fit ``room``, shortened."""
        text = _without_lone_surrogates(word.word)
        fixed = utf8_size(encode_json(WordTiming("-", word.start_s, word.end_s, final=word.final).to_json())) + 1
        if utf8_size(encode_json({"word": text})) - utf8_size(encode_json({"word": ""})) > room - fixed:
            text = next(split_text_to_fit(text, room - fixed))
        return word if text == word.word else WordTiming(text, word.start_s, word.end_s, final=word.final)

    def _audio_pieces(self, event: AudioChunk) -> list[AgentEvent]:
        """The chunk's audio on the turn's timeline, cut (as its codec allows) into as few near-equal pieces as
        fit the budget. Raises ``AudioFormatError`` (``UncuttableAudioError`` for a packet too large)."""
        if self.codec is Codec.OPUS:
            return self._packet_pieces(event)
        tid = self.turn_id
        whole = event.piece(start_sample=self.samples, codec=self.codec)
        overhead = self._overhead(AudioChunk(tid, max(event.seq, _WIDE_INT), "", sample_offset=_WIDE_INT))
        room = max_pcm_bytes_for_base64(self.budget_bytes, overhead_bytes=overhead)
        pieces = whole.split(room, even=True)
        self.samples = whole.end_sample
        return [AudioChunk.of_piece(tid, event.seq, piece, client_wire=True) for piece in pieces]

    def _packet_pieces(self, event: AudioChunk) -> list[AgentEvent]:
        """An Opus chunk's whole packets in as few messages as fit the budget (a packet is never cut), each placed
        on the PCM timeline. Raises ``AudioFormatError`` for a chunk without its packets or ``samples``, or whose
        ``samples`` do not match where its packets land, and ``UncuttableAudioError`` for a packet too large."""
        tid = self.turn_id
        if event.packet_bytes is None or event.samples is None:
            raise AudioFormatError(f"Opus audio_chunk {event.seq} needs packet_bytes and samples")
        packets = event.packets()
        chunk_end = self.samples + event.samples
        fixed = self._overhead(AudioChunk(tid, _WIDE_INT, "", _WIDE_INT, _WIDE_INT, ()))
        groups: list[list[bytes]] = [[]]
        data_bytes = list_bytes = 0
        for packet in packets:
            entry = len(str(len(packet))) + 1  # its length in packet_bytes and a comma
            if fixed + _base64_size(len(packet)) + entry > self.budget_bytes:
                raise UncuttableAudioError(
                    f"an Opus packet of {len(packet)} bytes does not fit a {self.budget_bytes}-byte message: "
                    "make smaller packets (a lower bitrate or shorter frames)"
                )
            if groups[-1] and fixed + _base64_size(data_bytes + len(packet)) + list_bytes + entry > self.budget_bytes:
                groups.append([])
                data_bytes = list_bytes = 0
            groups[-1].append(packet)
            data_bytes += len(packet)
            list_bytes += entry
        out: list[AgentEvent] = []
        for group in groups:
            start, samples = self._packets.place(len(group), limit=chunk_end)
            out.append(AudioChunk.of_packets(tid, event.seq, group, samples, sample_offset=start))
        if self._packets.samples != chunk_end:
            raise AudioFormatError(
                f"Opus audio_chunk {event.seq} says it holds {event.samples} samples but its packets end at sample "
                f"{self._packets.samples}, not {chunk_end}"
            )
        self.samples = chunk_end
        return out


__all__ = ["TurnFramer", "max_audio_pcm_bytes", "split_pcm_evenly", "split_text_to_fit", "utf8_size"]
