"""A client of the relay's WebSocket API (the client protocol, §4) over a real WebSocket: runs one turn on top
of :class:`relay_core.client.session.ClientSession`, reconnecting and resuming when the connection drops, and
reports what a mobile client would measure (time to first audio, message sizes, duplicates, gaps).

Used by ``relay chat``, ``make demo``, the tests and bench/bench_gateway.py.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import quote

import websockets
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from relay_cli.opus_decode import decode_opus_turn
from relay_core.agent.events import TurnMode
from relay_core.audio_piece import AudioChoice, Codec
from relay_core.client.session import (
    STALL_RESUME_S,
    AudioEnded,
    AudioReceived,
    AudioStarted,
    ClientEvent,
    ClientSession,
    ClientTurn,
    DuplicateIgnored,
    GapDetected,
    OpusReceived,
    Rejected,
    TextReceived,
    TurnEnded,
    TurnOutcome,
    TurnPhase,
)
from relay_core.close_codes import MESSAGE_TOO_BIG
from relay_core.speech_options import DEFAULT_SPEECH, SpeechOptions
from relay_core.word_timings import WordTiming

DEFAULT_TURN_TIMEOUT_S = 300.0
NEW_CONVERSATION_TIMEOUT_S = 30.0
"""How long ``newConversation`` may go unanswered (one DynamoDB write behind it) before the client gives up."""

BargeIn = Callable[[ClientTurn], int | None]
"""Asked after every message applied: a number means "cancel the turn now, this many milliseconds of its audio were
played" (the agent then remembers only the words heard); None means go on."""


class GatewayTurnError(RuntimeError):
    """The turn did not end within its deadline, or the connection could not be re-established."""


class NewConversationError(RuntimeError):
    """The gateway refused ``newConversation`` or did not answer it in time; the conversation may be the old one."""


@dataclass
class TurnReport:
    """One turn as the client saw it."""

    turn_id: str
    outcome: TurnOutcome | None = None
    code: str | None = None
    message: str | None = None
    text: str = ""
    pcm: bytes = b""
    time_to_first_audio_s: float | None = None
    """From sending ``sendMessage`` to the first audio sample (client clock)."""
    time_to_first_text_s: float | None = None
    agent_first_audio_s: float | None = None
    """The agent's own time to first audio, as its ``agent_end`` reports it (the rest of the client's is the path)."""
    connect_s: float = 0.0
    """Opening the WebSocket (the ``$connect`` authorizer and handler), before ``sendMessage`` was sent."""
    elapsed_s: float = 0.0
    """From sending ``sendMessage`` to the turn's end."""
    messages: int = 0
    """Messages received for this connection's turn, duplicates included."""
    largest_message_bytes: int = 0
    duplicates: int = 0
    gaps: int = 0
    reconnects: int = 0
    stall_resumes: int = 0
    """Resumes sent on the open connection after ``stall_s`` without a message."""
    seqs: list[int] = field(default_factory=list)
    """Every applied seq, in order (a correct turn: 0, 1, 2, ... with no repeat)."""
    words: list[WordTiming] = field(default_factory=list)
    """The reply's word timings (only when the turn asked for them), on the turn's audio timeline."""
    cancel_played_ms: int | None = None
    """The ``played_ms`` the client's cancel carried (``barge_in``), if it sent one."""
    audio_format: str | None = None
    """The turn's audio format as ``audio_stream_start`` named it (``pcm_s16le`` or ``opus``)."""
    packets: list[bytes] = field(default_factory=list, repr=False)
    """An Opus turn's packets, in order (``pcm`` is then their decoded audio)."""
    received: list[str] = field(default_factory=list, repr=False)
    """Every text message received for the turn, duplicates and replays included, in arrival order."""


def connect_url(gateway_url: str, token: str) -> str:
    """The ``$connect`` URL: the token goes in the query string (browsers cannot set WebSocket headers)."""
    return f"{gateway_url}?token={quote(token, safe='')}"


async def open_connection(gateway_url: str, token: str) -> ClientConnection:
    """Connect as a client; raises ``websockets.InvalidStatus`` (401/403) when the authorizer refuses."""
    return await websockets.connect(connect_url(gateway_url, token), max_size=None, compression=None)


async def run_turn(
    gateway_url: str,
    token: str,
    prompt: str,
    *,
    mode: TurnMode = TurnMode.BIDI,
    options: SpeechOptions = DEFAULT_SPEECH,
    on_event: Callable[[ClientEvent], None] | None = None,
    drop_after: int | None = None,
    cancel_after_first_audio: bool = False,
    timeout_s: float = DEFAULT_TURN_TIMEOUT_S,
    stall_s: float = STALL_RESUME_S,
    timings: bool = False,
    barge_in: BargeIn | None = None,
    audio: AudioChoice = AudioChoice.PCM,
) -> TurnReport:
    """Run one turn to its end. ``drop_after=N``: abort the connection after the N-th turn message, reconnect
    and ``resume`` (what a phone does when the network drops). ``cancel_after_first_audio``: barge in.
    ``stall_s``: after this long without a message, ``resume`` on the same connection (a lost post).
    ``timings``: ask for the reply's word timings (``WordsReceived`` events, :attr:`TurnReport.words`).
    ``barge_in``: a truthful barge-in, a cancel carrying ``played_ms`` when it first answers a number.
    ``audio``: ask for PCM (the default) or Opus; an Opus turn's packets are decoded (PyAV) into ``pcm``.
    A message over the protocol's limits raises ``LimitExceededError`` before connecting; a ``sendMessage`` the
    gateway closes the connection over (1009) ends the turn rejected with ``limit_exceeded``, not sent again."""
    session = ClientSession(collect_audio=True)
    send_message = session.send_message(prompt, options=options, mode=mode, timings=timings, audio=audio)
    turn_id = session.turns[-1].turn_id
    connecting = time.perf_counter()
    deadline = connecting + timeout_s
    websocket = await open_connection(gateway_url, token)
    started = time.perf_counter()
    connect_s = started - connecting
    pre_skip = 0
    total_samples: int | None = None
    try:
        await websocket.send(send_message)
        report = TurnReport(turn_id, connect_s=connect_s)
        cancelled = False
        heard = time.perf_counter()
        while not session.turn(turn_id).finished:
            now = time.perf_counter()
            remaining = deadline - now
            if remaining <= 0:
                raise GatewayTurnError(f"turn {turn_id} did not end within {timeout_s:.0f} s")
            try:
                data = await asyncio.wait_for(websocket.recv(), min(remaining, max(0.0, heard + stall_s - now)))
            except ConnectionClosed as closed:
                if _too_big(closed) and session.turn(turn_id).phase is TurnPhase.SENT:
                    # the gateway refused the sendMessage itself: sending it again would be closed the same way
                    for event in session.closed_too_big(turn_id, len(send_message.encode("utf-8"))):
                        if isinstance(event, TurnEnded):
                            report.outcome, report.code, report.message = event.outcome, event.code, event.message
                        if on_event is not None:
                            on_event(event)
                    continue
                websocket = await _reconnect(gateway_url, token, session, report)
                heard = time.perf_counter()
                continue
            except TimeoutError:
                if time.perf_counter() - heard >= stall_s and session.turn(turn_id).phase is not TurnPhase.SENT:
                    report.stall_resumes += 1
                    await websocket.send(session.resume(turn_id))
                    heard = time.perf_counter()
                continue
            heard = time.perf_counter()
            size = len(data.encode("utf-8")) if isinstance(data, str) else len(data)
            report.largest_message_bytes = max(report.largest_message_bytes, size)
            report.messages += 1
            report.received.append(data if isinstance(data, str) else data.decode("utf-8", "replace"))
            last_seq = session.turn(turn_id).last_seq
            for event in session.receive(data):
                now = time.perf_counter() - started
                if isinstance(event, AudioReceived | OpusReceived):
                    if report.time_to_first_audio_s is None:
                        report.time_to_first_audio_s = now
                    if cancel_after_first_audio and not cancelled:
                        cancelled = True
                        await websocket.send(session.cancel(turn_id))
                elif isinstance(event, AudioStarted):
                    report.audio_format = event.format
                    pre_skip = event.pre_skip or 0
                elif isinstance(event, AudioEnded):
                    total_samples = event.total_samples
                elif isinstance(event, TextReceived):
                    if report.time_to_first_text_s is None:
                        report.time_to_first_text_s = now
                elif isinstance(event, DuplicateIgnored):
                    report.duplicates += 1
                elif isinstance(event, GapDetected):
                    report.gaps += 1
                    await websocket.send(session.resume(turn_id))
                elif isinstance(event, TurnEnded):
                    report.outcome, report.code, report.message = event.outcome, event.code, event.message
                    report.agent_first_audio_s = event.agent_first_audio_s
                if on_event is not None:
                    on_event(event)
            if session.turn(turn_id).last_seq > last_seq:
                report.seqs.append(session.turn(turn_id).last_seq)
                if barge_in is not None and not cancelled and not session.turn(turn_id).finished:
                    played_ms = barge_in(session.turn(turn_id))
                    if played_ms is not None:
                        cancelled = True
                        report.cancel_played_ms = played_ms
                        await websocket.send(session.cancel(turn_id, played_ms=played_ms))
            if drop_after is not None and report.messages == drop_after and report.reconnects == 0:
                websocket.transport.abort()
                await websocket.wait_closed()
                websocket = await _reconnect(gateway_url, token, session, report)
    finally:
        await websocket.close()
    turn = session.turn(turn_id)
    report.text = turn.text
    report.pcm = turn.pcm
    if turn.codec is Codec.OPUS:
        report.packets = list(turn.packets)
        report.pcm = decode_opus_turn(report.packets, pre_skip=pre_skip, total_samples=total_samples or turn.samples)
    report.words = list(turn.words)
    report.elapsed_s = time.perf_counter() - started
    return report


def _too_big(closed: ConnectionClosed) -> bool:
    """Whether the gateway closed the connection over a message too big for it (a frame over 32 KB)."""
    return closed.rcvd is not None and closed.rcvd.code == MESSAGE_TOO_BIG


async def start_new_conversation(
    gateway_url: str, token: str, *, timeout_s: float = NEW_CONVERSATION_TIMEOUT_S
) -> None:
    """Start over: send ``newConversation`` on a connection of the token's user and return once the gateway
    answered ``conversation_started`` (so a turn sent after this call, on any connection, is in the new
    conversation). Raises :class:`NewConversationError` for a rejection or no answer within ``timeout_s``; the
    handshake's own errors (``websockets.InvalidStatus``, ``OSError``) as :func:`open_connection` does."""
    session = ClientSession()
    websocket = await open_connection(gateway_url, token)
    try:
        await websocket.send(session.new_conversation())
        async with asyncio.timeout(timeout_s):
            while session.conversation_pending:
                for event in session.receive(await websocket.recv()):
                    if isinstance(event, Rejected):
                        raise NewConversationError(f"the gateway refused newConversation: {event.code} {event.message}")
    except TimeoutError:
        raise NewConversationError(f"newConversation was not answered within {timeout_s:.0f} s: try again") from None
    except ConnectionClosed as exc:
        raise NewConversationError(f"the connection closed before newConversation was answered ({exc})") from None
    finally:
        await websocket.close()


async def _reconnect(gateway_url: str, token: str, session: ClientSession, report: TurnReport) -> ClientConnection:
    report.reconnects += 1
    if report.reconnects > 5:
        raise GatewayTurnError(f"the connection dropped {report.reconnects} times during turn {report.turn_id}")
    websocket = await open_connection(gateway_url, token)
    for message in session.resume_all():
        await websocket.send(message)
    return websocket


__all__ = [
    "DEFAULT_TURN_TIMEOUT_S",
    "BargeIn",
    "GatewayTurnError",
    "NewConversationError",
    "TurnReport",
    "connect_url",
    "open_connection",
    "run_turn",
    "start_new_conversation",
]
