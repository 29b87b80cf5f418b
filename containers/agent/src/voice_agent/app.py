"""The agent app: a ``BedrockAgentCoreApp`` whose ``/invocations`` streams a turn's §3 events as SSE.

Invocations (``POST /invocations``, JSON body; the ``X-Amzn-Bedrock-AgentCore-Runtime-Session-Id`` header
names the conversation), parsed by :func:`relay_core.agent.events.parse_request`:

- a turn — ``{"prompt", "mode": "bidi"|"batch", "voice", "speed", "request_id"?}`` (``"action": "turn"`` or no
  ``action``) — answers ``text/event-stream``: ``data: {event}`` for each §3 event, ending with exactly one
  ``agent_end`` or ``error``. One Strands ``Agent`` is kept per session id, so a session is a conversation; with
  ``VOICE_AGENT_HISTORY_BUCKET`` its history is stored there (Strands' ``S3SessionManager``,
  :mod:`voice_agent.history`) and outlives the runtime session and the process.
  Turns of a conversation never overlap: a new prompt while a turn runs cancels that turn (barge-in by speaking)
  and waits until it has stopped. An unknown voice is refused (``error`` ``unknown_voice``) before any text;
- a cancel — ``{"action": "cancel", "request_id"?}`` on the same session — answers JSON
  ``{"cancelled": [request ids]}`` at once; the running turn (that request id, or the session's running turn)
  then ends its stream with ``agent_end`` ``status: "cancelled"`` and no further audio;
- any other ``action``: one ``error`` event ``unknown_action`` naming the valid actions.

A caller that disconnects mid-turn stops the turn: the model stops and the TTS session is closed within a second
(:mod:`voice_agent.streaming`).

``GET /ping`` answers ``{"status": "Healthy"}`` (AgentCore's health check).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncGenerator, Callable
from typing import Any

from bedrock_agentcore.runtime import BedrockAgentCoreApp
from bedrock_agentcore.runtime.context import RequestContext
from strands import Agent, ModelRetryStrategy
from strands.agent.conversation_manager import SlidingWindowConversationManager
from strands.models.model import Model

from relay_core.agent.defaults import HISTORY_AGENT_ID, MODEL_ATTEMPTS, MODEL_RETRY_DELAY_S
from relay_core.agent.events import (
    AgentCancel,
    AgentEnd,
    AgentErrorCode,
    AgentFailed,
    AgentPayload,
    event_to_json,
    parse_request,
)
from relay_core.errors import ProtocolError
from relay_core.fields import JsonObject
from relay_transport.base import TtsTransport
from voice_agent.config import AgentConfig
from voice_agent.conversations import Conversation, ConversationBusyError, Conversations, DuplicateTurnError
from voice_agent.history import HistoryStore, HistoryUnavailableError
from voice_agent.models import make_model
from voice_agent.strands_source import StrandsTextSource
from voice_agent.streaming import EventStreamResponse
from voice_agent.transport_choice import make_transport
from voice_agent.turn import Turn, TurnRequest, TurnSettings
from voice_agent.voice_check import UnknownVoiceError, VoiceCheck

logger = logging.getLogger(__name__)


class VoiceAgentService:
    """What the entry point does, independent of the HTTP framing (so it is testable on its own)."""

    def __init__(
        self,
        config: AgentConfig,
        *,
        transport: TtsTransport | None = None,
        model_factory: Callable[[], Model] | None = None,
    ) -> None:
        self.config = config
        self.transport = transport if transport is not None else make_transport(config)
        self._model_factory = model_factory if model_factory is not None else (lambda: make_model(config))
        self.history = (
            HistoryStore(config.history_bucket, config.history_prefix, region=config.aws_region)
            if config.history_bucket
            else None
        )
        self.conversations = Conversations(
            self._new_conversation, max_age=None if self.history is None else self.history.max_age
        )
        self.voices = VoiceCheck(self.transport)
        self.settings = TurnSettings(
            first_fragment_words=config.first_fragment_words,
            max_sentence_chars=config.max_sentence_chars,
            audio_chunk_bytes=config.audio_chunk_bytes,
            cancel_grace_s=config.cancel_grace_s,
            tts_capacity_wait_s=config.tts_capacity_wait_s,
            model_label=config.model_label,
        )

    @property
    def history_label(self) -> str:
        """Where conversations are kept, as the start-up log says it."""
        if self.history is None:
            return "in memory only (set VOICE_AGENT_HISTORY_BUCKET to keep them across restarts)"
        window = self.config.history_window_messages
        return f"in {self.history.location} (the model sees the last {window} messages)"

    def _new_conversation(self, session_id: str | None) -> Conversation:
        """A conversation's agent, its history restored from the store when there is one (blocking I/O)."""
        history = None if self.history is None or session_id is None else self.history.session_manager(session_id)
        agent = Agent(
            model=self._model_factory(),
            system_prompt=self.config.system_prompt,
            callback_handler=None,
            agent_id=HISTORY_AGENT_ID,
            conversation_manager=SlidingWindowConversationManager(window_size=self.config.history_window_messages),
            session_manager=history,
            retry_strategy=ModelRetryStrategy(
                max_attempts=MODEL_ATTEMPTS, initial_delay=MODEL_RETRY_DELAY_S, max_delay=MODEL_RETRY_DELAY_S
            ),
        )
        started_at = None if history is None else history.started_at
        return Conversation(session_id=session_id, agent=agent, history=history, started_at=started_at)

    def handle(self, payload: Any, session_id: str | None) -> AsyncGenerator[JsonObject] | JsonObject:
        """A cancel answers a JSON object; anything else is a turn, answered as a stream of event objects."""
        fallback_id = _request_id_of(payload) or uuid.uuid4().hex
        try:
            request = parse_request(payload if isinstance(payload, dict) else {"prompt": payload})
        except ProtocolError as exc:
            code = exc.code if exc.code == AgentErrorCode.UNKNOWN_ACTION else AgentErrorCode.INVALID_PAYLOAD.value
            return _one_event(AgentFailed(fallback_id, code, exc.message))
        if isinstance(request, AgentCancel):
            return self.cancel(request, session_id)
        return self.turn(request, request.request_id or fallback_id, session_id)

    def cancel(self, request: AgentCancel, session_id: str | None) -> JsonObject:
        """Cancel the running turn(s). With ``played_ms`` (a barge-in that says how much the listener heard), the
        turn's reply is also cut in history at the last word heard, even when the turn has already ended but
        nothing newer has started (its audio was still playing)."""
        played_ms = request.played_ms
        turns = self.conversations.running(session_id=session_id, request_id=request.request_id)
        for turn in turns:
            if played_ms is None:
                turn.cancel()
            else:
                turn.barge_in(played_ms)
        if played_ms is not None and not turns:
            ended = self.conversations.ended_latest(session_id=session_id, request_id=request.request_id)
            if ended is not None:
                ended.barge_in(played_ms)
        logger.info("cancel (session %s, request %s): %d turn(s)", session_id, request.request_id, len(turns))
        return {"cancelled": [t.request_id for t in turns]}

    async def turn(self, payload: AgentPayload, request_id: str, session_id: str | None) -> AsyncGenerator[JsonObject]:
        """The turn's events as JSON objects; exactly one terminal event, never a stack trace."""
        voice = payload.options.voice or self.config.voice
        try:
            await self.voices.check(voice)
        except UnknownVoiceError as exc:
            yield event_to_json(AgentFailed(request_id, AgentErrorCode.UNKNOWN_VOICE.value, exc.message))
            return
        try:
            conversation = await self.conversations.open(session_id)
        except HistoryUnavailableError as exc:
            logger.error("turn %s: %s", request_id, exc.message)
            message = "the conversation's history could not be read; retry shortly (the agent's log says why)"
            yield event_to_json(AgentFailed(request_id, AgentErrorCode.INTERNAL.value, message))
            return
        request = TurnRequest(
            request_id=request_id,
            prompt=payload.prompt,
            mode=payload.mode,
            options=payload.options.or_defaults(voice=voice, lang=self.config.lang),
            session_id=session_id,
            timings=payload.timings,
            audio=payload.audio,
        )
        source = StrandsTextSource(conversation.agent, payload.prompt, history=conversation.history)
        turn = Turn(request, source, self.transport, settings=self.settings, history=source)
        try:
            await self.conversations.begin(conversation, turn)
        except DuplicateTurnError as exc:
            yield event_to_json(AgentFailed(request_id, AgentErrorCode.INVALID_PAYLOAD.value, exc.message))
            return
        except ConversationBusyError as exc:
            yield event_to_json(AgentFailed(request_id, AgentErrorCode.CONVERSATION_BUSY.value, exc.message))
            return
        async with contextlib.aclosing(turn.events()) as events:
            async for event in events:
                if isinstance(event, AgentEnd | AgentFailed):
                    await self._stored(request_id, session_id)
                yield event_to_json(event)

    async def _stored(self, request_id: str, session_id: str | None) -> None:
        """Wait for the conversation's queued history writes, so that a turn which says it ended has stored what
        it said (a process killed after it loses nothing); they are written long before in practice."""
        if self.history is None or session_id is None:
            return
        if not await asyncio.to_thread(self.history.flush, session_id):
            logger.warning("turn %s: its history writes are still queued at its end; they continue", request_id)


async def _one_event(event: AgentFailed) -> AsyncGenerator[JsonObject]:
    yield event_to_json(event)


def _request_id_of(payload: Any) -> str | None:
    if isinstance(payload, dict):
        value = payload.get("request_id")
        if isinstance(value, str) and 0 < len(value) <= 128 and value.isprintable():
            return value
    return None


def create_app(
    config: AgentConfig | None = None,
    *,
    transport: TtsTransport | None = None,
    model_factory: Callable[[], Model] | None = None,
) -> BedrockAgentCoreApp:
    """The AgentCore app. ``transport`` and ``model_factory`` replace the configured ones (tests, benchmarks)."""
    service = VoiceAgentService(config or AgentConfig.from_env(), transport=transport, model_factory=model_factory)
    app = BedrockAgentCoreApp()

    @app.entrypoint
    async def invoke(payload: Any, context: RequestContext) -> EventStreamResponse | JsonObject:
        answer = service.handle(payload, context.session_id)
        if isinstance(answer, dict):
            return answer
        loop = asyncio.get_running_loop()  # the app's worker loop: every turn and cancel runs on it
        return EventStreamResponse(lambda: answer, loop=loop)

    app.state.service = service
    logger.info("voice agent ready: model %s; TTS via %s", service.config.model_label, service.config.transport.value)
    logger.info("conversations are kept %s", service.history_label)
    return app


__all__ = ["VoiceAgentService", "create_app"]
