"""One turn of the voice agent: model text in, §3 agent events out, speech overlapping generation.

:func:`run_turn` is plain asyncio (no AgentCore, no Strands): it takes the reply as a :class:`TextSource` of
text deltas and a :class:`~voice_agent.transport.base.TtsTransport`, and yields the turn's events.

What it guarantees:
- ``agent_start`` first; then every text delta as ``text_delta`` (seq 0, 1, ...) the moment it arrives.
- ``bidi``: ONE TTS session per turn. Each sentence the segmenter completes is sent into it at once; the
  agent never waits for a sentence's audio before sending the next (generation and synthesis overlap, the
  container keeps synthesis sequential). The tail is flushed when the model finishes, then ``close``.
  ``batch``: the whole reply as one synthesize request once the model finishes; otherwise identical.
- Audio is forwarded as it arrives: ``audio_stream_start`` once, ``audio_chunk`` (seq 0, 1, ..., each at most
  ``audio_chunk_bytes`` of PCM, whole samples), ``audio_stream_end``.
- Barge-in: when ``cancel`` is set, generation stops, ``cancel`` goes to the TTS session, no audio of the
  turn is emitted any more, and the turn ends with ``agent_end`` status ``cancelled``.
- Faults: a TTS session refused or dropped gets one reconnect (unfinished sentences are resent); if that
  fails the text still streams to the end and the turn ends with an ``error`` event naming the code.
- Exactly one terminal event (``agent_end`` or ``error``) ends every turn; no stack trace ever reaches it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Protocol

from relay_core import limits
from relay_core.agent_events import (
    AgentEnd,
    AgentError,
    AgentErrorCode,
    AgentEvent,
    AgentStart,
    AudioChunk,
    AudioStreamEnd,
    AudioStreamStart,
    TextDelta,
    TurnMode,
    TurnStatus,
)
from relay_core.audio import b64encode, chunk_pcm, pcm_duration_s
from relay_core.segmenter import SentenceSegmenter, split_to_fit
from voice_agent.transport.base import TtsTransport
from voice_agent.tts_link import LinkAudio, LinkRequestFailed, TtsLink, TtsLinkError

logger = logging.getLogger(__name__)


class TextSource(Protocol):
    """The reply being written: text deltas in order, and a way to stop the writer."""

    def stream(self) -> AsyncIterator[str]:
        """The reply's text deltas; ends when the model is done. May raise on a model failure."""
        ...

    def cancel(self) -> None:
        """Ask the writer to stop soon (cooperative; the turn also cancels the task after a grace period)."""
        ...


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """What one turn is asked to do."""

    request_id: str
    prompt: str
    mode: TurnMode = TurnMode.BIDI
    voice: str | None = None
    speed: float = limits.DEFAULT_SPEED
    session_id: str | None = None


@dataclass(frozen=True, slots=True)
class TurnSettings:
    """How turns run (from :class:`~voice_agent.config.AgentConfig`)."""

    first_fragment_words: int | None = 4
    max_sentence_chars: int = 300
    audio_chunk_bytes: int = 24_000
    cancel_grace_s: float = 2.0
    model_label: str = ""


@dataclass
class _Done:
    """A worker task finished (``error`` set when it failed)."""

    worker: str
    error: BaseException | None = None


@dataclass
class _TurnState:
    started: float = field(default_factory=time.perf_counter)
    text_seq: int = 0
    text_chars: int = 0
    sentences: int = 0
    audio_seq: int = 0
    audio_bytes: int = 0
    audio_started: bool = False
    first_audio_s: float | None = None
    model_error: str | None = None
    tts_error: TtsLinkError | None = None
    request_failures: list[LinkRequestFailed] = field(default_factory=list)


async def run_turn(
    request: TurnRequest,
    text: TextSource,
    transport: TtsTransport,
    *,
    settings: TurnSettings,
    cancel: asyncio.Event,
) -> AsyncIterator[AgentEvent]:
    """The events of one turn (see the module docstring for the guarantees)."""
    rid = request.request_id
    state = _TurnState()
    yield AgentStart(request_id=rid, session_id=request.session_id, mode=request.mode.value, model=settings.model_label)
    queue: asyncio.Queue[AgentEvent | _Done] = asyncio.Queue()
    link = TtsLink(transport, request_prefix=rid, voice=request.voice, speed=request.speed)
    workers: dict[str, asyncio.Task[None]] = {}
    cancelled = False
    try:
        try:
            await link.open()
            workers["audio"] = asyncio.create_task(
                _pump_audio(request=request, link=link, state=state, queue=queue, settings=settings)
            )
        except TtsLinkError as exc:
            state.tts_error = exc
        workers["text"] = asyncio.create_task(
            _generate(request=request, text=text, link=link, state=state, queue=queue, settings=settings)
        )
        cancel_wait = asyncio.create_task(cancel.wait())
        running = set(workers)
        while running:
            get = asyncio.create_task(queue.get())
            done, _ = await asyncio.wait({get, cancel_wait}, return_when=asyncio.FIRST_COMPLETED)
            if cancel_wait in done:
                get.cancel()
                cancelled = True
                break
            item = get.result()
            if isinstance(item, _Done):
                running.discard(item.worker)
                if item.error is not None:
                    _record_failure(item, state, rid)
                    if item.worker == "text" and "audio" in running:
                        # The model failed: no more sentences will come; let the TTS finish what it has.
                        await link.finish()
                continue
            yield item
        cancel_wait.cancel()
        if cancelled:
            await _stop(text, link, workers, settings)
            if state.audio_started:
                yield _audio_end(rid, state)
            yield _end(rid, state, TurnStatus.CANCELLED)
            return
        if state.audio_started:
            yield _audio_end(rid, state)
        yield _terminal(rid, state)
    finally:
        for task in workers.values():
            if not task.done():
                task.cancel()
        for task in workers.values():
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await link.aclose()


async def _generate(
    *,
    request: TurnRequest,
    text: TextSource,
    link: TtsLink,
    state: _TurnState,
    queue: asyncio.Queue[AgentEvent | _Done],
    settings: TurnSettings,
) -> None:
    """Stream the reply: text deltas out at once, sentences into the TTS session at once (bidi)."""
    segmenter = SentenceSegmenter(
        max_chars=settings.max_sentence_chars, first_fragment_words=settings.first_fragment_words
    )
    reply: list[str] = []
    try:
        async for delta in text.stream():
            if not delta:
                continue
            queue.put_nowait(TextDelta(request_id=request.request_id, seq=state.text_seq, text=delta))
            state.text_seq += 1
            state.text_chars += len(delta)
            if request.mode is TurnMode.BIDI:
                for sentence in segmenter.feed(delta):
                    await _speak(link, state, sentence)
            else:
                reply.append(delta)
        if request.mode is TurnMode.BIDI:
            pieces = segmenter.flush()
        else:
            # One request for the whole reply; only a reply over the per-request limit is split.
            pieces = split_to_fit("".join(reply), lambda piece: len(piece) <= limits.MAX_TEXT_CHARS)
        for piece in pieces:
            await _speak(link, state, piece)
        await link.finish()
    except Exception as exc:  # noqa: BLE001 - any failure becomes the turn's one terminal error event
        queue.put_nowait(_Done("text", exc))
        return
    queue.put_nowait(_Done("text"))


async def _speak(link: TtsLink, state: _TurnState, sentence: str) -> None:
    state.sentences += 1
    if state.tts_error is None:
        await link.speak(sentence)


async def _pump_audio(
    *,
    request: TurnRequest,
    link: TtsLink,
    state: _TurnState,
    queue: asyncio.Queue[AgentEvent | _Done],
    settings: TurnSettings,
) -> None:
    """Turn TTS frames into audio events as they arrive."""
    rid = request.request_id
    try:
        async for event in link.events():
            if isinstance(event, LinkRequestFailed):
                state.request_failures.append(event)
                continue
            assert isinstance(event, LinkAudio)
            if not state.audio_started:
                state.audio_started = True
                state.first_audio_s = time.perf_counter() - state.started
                queue.put_nowait(AudioStreamStart(request_id=rid, voice=event.voice))
            for piece in chunk_pcm(event.pcm, settings.audio_chunk_bytes):
                queue.put_nowait(AudioChunk(request_id=rid, seq=state.audio_seq, data=b64encode(piece)))
                state.audio_seq += 1
                state.audio_bytes += len(piece)
    except Exception as exc:  # noqa: BLE001 - any failure becomes the turn's one terminal error event
        queue.put_nowait(_Done("audio", exc))
        return
    queue.put_nowait(_Done("audio"))


def _record_failure(item: _Done, state: _TurnState, rid: str) -> None:
    error = item.error
    if isinstance(error, TtsLinkError):
        logger.warning("turn %s: %s", rid, error.message)
        state.tts_error = error
    elif item.worker == "text":
        logger.warning("turn %s: the model failed", rid, exc_info=error)
        detail = str(error).splitlines()[0][:200] if str(error) else ""
        state.model_error = f"the model failed ({type(error).__name__}{': ' + detail if detail else ''})"
    else:
        logger.error("turn %s: internal error in the %s worker", rid, item.worker, exc_info=error)
        state.tts_error = TtsLinkError(AgentErrorCode.INTERNAL.value, "an internal error stopped the audio")


async def _stop(
    text: TextSource, link: TtsLink, workers: dict[str, asyncio.Task[None]], settings: TurnSettings
) -> None:
    """Barge-in: stop the writer, cancel the TTS session, and stop reading audio."""
    text.cancel()
    audio = workers.get("audio")
    if audio is not None:
        audio.cancel()
    await link.cancel()
    writer = workers.get("text")
    if writer is not None and not writer.done():
        # Let the model stop at its next checkpoint (so a reused agent's history stays consistent),
        # then cancel the task outright.
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(writer), timeout=settings.cancel_grace_s)


def _audio_end(rid: str, state: _TurnState) -> AudioStreamEnd:
    return AudioStreamEnd(
        request_id=rid, total_chunks=state.audio_seq, duration_s=round(pcm_duration_s(state.audio_bytes), 3)
    )


def _end(rid: str, state: _TurnState, status: TurnStatus) -> AgentEnd:
    return AgentEnd(
        request_id=rid,
        status=status.value,
        text_chars=state.text_chars,
        sentences=state.sentences,
        first_audio_s=None if state.first_audio_s is None else round(state.first_audio_s, 4),
        elapsed_s=round(time.perf_counter() - state.started, 4),
    )


def _terminal(rid: str, state: _TurnState) -> AgentEnd | AgentError:
    if state.model_error is not None:
        return AgentError(request_id=rid, code=AgentErrorCode.MODEL_FAILED.value, message=state.model_error)
    if state.tts_error is not None:
        return AgentError(
            request_id=rid,
            code=state.tts_error.code,
            message=f"{state.tts_error.message}. The reply's text was delivered without (all of) its audio.",
        )
    if state.request_failures:
        first = state.request_failures[0]
        return AgentError(
            request_id=rid,
            code=AgentErrorCode.TTS_FAILED.value,
            message=f"{len(state.request_failures)} sentence(s) could not be spoken: {first.code}: {first.message}",
        )
    return _end(rid, state, TurnStatus.COMPLETED)


__all__ = ["TextSource", "TurnRequest", "TurnSettings", "run_turn"]
