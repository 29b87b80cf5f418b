"""``WS /invocations-bidirectional-stream``: the TTS session of ARCHITECTURE §1 over a real socket.

This module is only I/O around :class:`relay_core.tts.session.TtsServerSession`: every received frame (text or
binary; SageMaker sends binary) goes into the session, and whatever the session wants sent goes out, in order,
through one lock. A synthesis task takes the session's requests one at a time and renders them segment by
segment through the shared scheduler, sending each segment's PCM as soon as it exists.

A session that finds every slot of the instance taken (:mod:`kokoro_server.admission`) is served all the same: it
joins the admission queue and says so (``queued``, repeated every ``QUEUED_REPEAT_S`` with its place); its frames
are handled meanwhile (requests kept, in order); synthesis starts when a slot is handed to it (``admitted``), or,
past ``KOKORO_QUEUE_WAIT_S``, the session ends with ``at_capacity`` and the socket is closed with 1000. A client
that leaves while waiting leaves the queue at once.

Guarantees: a cancel drops the request's queued scheduler job at once (a segment waiting for a worker never
runs) and stops the running request at the next segment boundary (the segment in progress is discarded); an
engine failure ends that request with ``error`` and the session goes on; after ``close`` the queue
is finished and the socket closed with 1000; when the client goes away, the session's queued job is dropped at once
and nothing more of it is rendered.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import aclosing
from functools import partial

from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from kokoro_server.admission import Admission, Ticket, admission
from kokoro_server.engines import EngineError, InvalidRequestError, UnknownVoiceError
from kokoro_server.engines.speech_engine import SpeechEngine
from kokoro_server.errors import from_engine_error, internal_error
from kokoro_server.scheduled_speech import ScheduledSpeech, SpeechAudio, SpeechTimings
from kokoro_server.scheduler import Scheduler, SchedulerSession
from kokoro_server.session_metrics import SessionMetrics
from kokoro_server.state import NotReadyError, server_state
from kokoro_server.text_scripts import check_request_speakable
from kokoro_server.word_timer import WordTimer
from relay_core.close_codes import TRY_AGAIN_LATER
from relay_core.errors import InvalidFieldError, ProtocolError
from relay_core.tts.messages import QUEUED_REPEAT_S, SESSION_PATH, Synthesize, TtsErrorCode
from relay_core.tts.session import TtsServerSession

logger = logging.getLogger(__name__)

PATH = SESSION_PATH


class VoiceCheck:
    """The session's ``check_voice`` hook: engine voice errors as protocol errors, so they answer ``error``."""

    def __init__(self, engine: SpeechEngine) -> None:
        self._engine = engine

    def __call__(self, spec: str) -> None:
        try:
            self._engine.check_voice(spec)
        except UnknownVoiceError as exc:
            raise ProtocolError(str(exc), code=TtsErrorCode.UNKNOWN_VOICE.value) from exc
        except InvalidRequestError as exc:
            raise InvalidFieldError(str(exc)) from exc


class SessionSocket:
    """One accepted WebSocket and the :class:`TtsServerSession` it drives (not to be confused with the voice agent's
    ``TtsConnection``, the client end of such a socket)."""

    def __init__(
        self,
        websocket: WebSocket,
        engine: SpeechEngine,
        scheduler: Scheduler,
        *,
        lang: str,
        admission: Admission,
        queue_wait_s: float,
        metrics: SessionMetrics | None = None,
    ) -> None:
        self.websocket = websocket
        self.admission = admission
        self.queue_wait_s = queue_wait_s
        self.metrics = metrics
        self.engine = engine
        self.scheduler = scheduler
        self.session = TtsServerSession(
            default_voice=engine.default_voice,
            check_voice=VoiceCheck(engine),
            check_text=partial(check_request_speakable, engine, default_lang=lang),
        )
        self.jobs: SchedulerSession = scheduler.open_session(label=f"ws-{id(self):x}")
        self._send_lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._closed = False
        self._holds_slot = False
        """The session holds one of the instance's slots (given back when it ends)."""

    async def run(self) -> None:
        """Serve until the client disconnects or the session closes (waiting for a slot first when all are taken)."""
        ticket = self.admission.join()
        self._holds_slot = ticket.admitted
        if not ticket.admitted:
            self.session.wait_for_admission(position=ticket.position, max_wait_s=self.queue_wait_s)
            logger.info("session %s queued at position %d", self.jobs.label, ticket.position)
        worker = asyncio.create_task(self._serve(ticket), name="tts-synthesis")
        try:
            await self._flush()
            await self._receive_loop()
        finally:
            self.scheduler.cancel_session(self.jobs)
            worker.cancel()
            for outcome in await asyncio.gather(worker, return_exceptions=True):
                if isinstance(outcome, Exception) and not isinstance(outcome, WebSocketDisconnect):
                    logger.error("the synthesis task of a session failed: %r", outcome)
            if self._holds_slot:
                self.admission.leave()

    async def _serve(self, ticket: Ticket) -> None:
        """Wait for a slot unless the session had one at once (a cancelled wait leaves the queue and passes on any
        slot handed to it meanwhile), then synthesize until the session ends."""
        if not self._holds_slot:
            loop = asyncio.get_running_loop()
            joined = loop.time()
            admitted = await self.admission.wait_turn(
                ticket, self.queue_wait_s, still_waiting=self._still_waiting, every_s=QUEUED_REPEAT_S
            )
            self._holds_slot = admitted  # set before any other await: run() gives the slot back
            waited_s = loop.time() - joined
            if not admitted:
                logger.warning("session %s waited %.1f s without a slot: at capacity", self.jobs.label, waited_s)
                self.session.refuse_at_capacity(waited_s=waited_s)
                await self._flush()
                return
            logger.info("session %s admitted after %.2f s", self.jobs.label, waited_s)
            self.session.admit(waited_s=waited_s)
            await self._flush()
        await self._synthesis_loop()

    async def _still_waiting(self, position: int) -> None:
        """``queued`` again with the session's place now: the stream never idles while it waits."""
        self.session.still_waiting(position=position)
        await self._flush()

    async def _receive_loop(self) -> None:
        while True:
            message = await self.websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            data = message.get("bytes")
            if data is None:
                data = message.get("text")
            if data is None:
                continue
            if self._closed:
                continue
            self.session.receive_frame(data)
            self._drop_cancelled_work()
            self._wake.set()
            await self._flush()

    def _drop_cancelled_work(self) -> None:
        """Once the running request is cancelled, drop its queued scheduler job at once: a segment waiting for a
        worker never runs (its awaiter in :meth:`_speak` sees the drop); one already running finishes and is
        discarded, so the request stops at that segment boundary."""
        rid = self.session.running_request_id
        if rid is not None and self.session.is_cancelled(rid):
            self.scheduler.cancel_session(self.jobs, close=False)

    async def _synthesis_loop(self) -> None:
        while True:
            request = self.session.next_request()
            if request is None:
                await self._wake.wait()
                self._wake.clear()
                continue
            await self._flush()
            await self._speak(request)
            await self._flush()

    async def _speak(self, request: Synthesize) -> None:
        rid = request.request_id
        assert rid is not None
        synthesis = ScheduledSpeech(
            self.engine,
            self.scheduler,
            self.jobs,
            text=request.text,
            options=request.options,
            first_fragment_words=request.first_fragment_words,
            timer=WordTimer(self.engine, request_id=rid) if request.timings else None,
        )
        try:
            async with aclosing(synthesis.events()) as events:
                async for event in events:
                    if self.session.is_cancelled(rid):
                        break
                    if isinstance(event, SpeechTimings):
                        self.session.send_word_timings(rid, event.timings)
                    elif isinstance(event, SpeechAudio):
                        self.session.send_audio(rid, event.pcm)
                        await self._flush()
                        if self.session.is_cancelled(rid):
                            break
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling() == 0 and self.session.is_cancelled(rid):
                pass  # our queued job was dropped by the cancel (not this task cancelled): the request ends below
            else:
                raise
        except EngineError as exc:
            wire = from_engine_error(exc)
            self.session.fail_request(rid, code=wire.code, message=wire.message)
            return
        except WebSocketDisconnect:
            raise
        except Exception as exc:
            logger.exception("request %s failed", rid)
            wire = internal_error(exc)
            self.session.fail_request(rid, code=wire.code, message=wire.message)
            return
        self.session.finish_request(rid, elapsed_s=synthesis.elapsed_s, first_audio_s=synthesis.first_audio_s)
        if self.metrics is not None:
            self.metrics.request_finished(
                first_audio_s=synthesis.first_audio_s,
                elapsed_s=synthesis.elapsed_s,
                audio_s=synthesis.duration_s,
            )

    async def _flush(self) -> None:
        """Send what the session has to send, in order; close with 1000 once the session says so."""
        async with self._send_lock:
            if self._closed:
                return
            for frame in self.session.data_to_send():
                if isinstance(frame, bytes):
                    await self.websocket.send_bytes(frame)
                else:
                    await self.websocket.send_text(frame)
            if self.session.should_close:
                self._closed = True
                await self.websocket.close(self.session.close_code)


async def tts_session(websocket: WebSocket) -> None:
    """Accept the socket and serve one TTS session on it."""
    state = server_state(websocket)
    await websocket.accept()
    try:
        engine, scheduler = state.require()
    except NotReadyError as exc:
        await websocket.close(TRY_AGAIN_LATER, reason=exc.wire.message[:120])
        return
    try:
        endpoint = state.config.metrics_endpoint
        metrics = SessionMetrics(endpoint) if endpoint else None
        await SessionSocket(
            websocket,
            engine,
            scheduler,
            lang=state.config.lang,
            admission=admission(websocket),
            queue_wait_s=state.config.queue_wait_s,
            metrics=metrics,
        ).run()
    except WebSocketDisconnect:
        logger.debug("client disconnected")


routes = [WebSocketRoute(PATH, tts_session)]
