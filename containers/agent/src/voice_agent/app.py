"""The agent app: a ``BedrockAgentCoreApp`` whose ``/invocations`` streams a turn's §3 events as SSE.

Invocations (``POST /invocations``, JSON body; the ``X-Amzn-Bedrock-AgentCore-Runtime-Session-Id`` header
names the conversation):

- a turn — ``{"prompt", "mode": "bidi"|"batch", "voice", "speed", "request_id"?}`` — answers
  ``text/event-stream``: ``data: {event}`` for each §3 event, ending with exactly one ``agent_end`` or
  ``error``. One Strands ``Agent`` is kept per session id, so a session is a conversation. A new prompt on
  a session whose turn is still running cancels that turn first (barge-in by speaking);
- a cancel — ``{"action": "cancel", "request_id"?}`` on the same session — answers JSON
  ``{"cancelled": [request ids]}`` at once; the running turn (that request id, or every turn of the
  session) then ends its stream with ``agent_end`` ``status: "cancelled"`` and no further audio.

``GET /ping`` answers ``{"status": "Healthy"}`` (AgentCore's health check).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from bedrock_agentcore.runtime import BedrockAgentCoreApp
from bedrock_agentcore.runtime.context import RequestContext
from strands import Agent
from strands.models.model import Model

from relay_core.agent_events import (
    TERMINAL_EVENT_TYPES,
    AgentError,
    AgentErrorCode,
    AgentEvent,
    AgentPayload,
    event_to_json,
    is_cancel,
    parse_cancel,
    parse_payload,
)
from relay_core.errors import ProtocolError
from voice_agent.config import AgentConfig
from voice_agent.models import make_model
from voice_agent.sessions import SessionRegistry
from voice_agent.strands_source import StrandsTextSource
from voice_agent.transport.base import TtsTransport
from voice_agent.transport.factory import make_transport
from voice_agent.turn import TurnRequest, TurnSettings, run_turn

logger = logging.getLogger(__name__)

BARGE_IN_WAIT_S = 5.0
"""How long a new prompt waits for the session's cancelled turn to wind down before starting anyway."""


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
        factory = model_factory if model_factory is not None else (lambda: make_model(config))
        self.sessions = SessionRegistry(
            lambda: Agent(model=factory(), system_prompt=config.system_prompt, callback_handler=None)
        )
        self.settings = TurnSettings(
            first_fragment_words=config.first_fragment_words,
            max_sentence_chars=config.max_sentence_chars,
            audio_chunk_bytes=config.audio_chunk_bytes,
            cancel_grace_s=config.cancel_grace_s,
            model_label=config.model_label,
        )

    async def handle(self, payload: Any, session_id: str | None) -> AsyncIterator[dict[str, Any]] | dict[str, Any]:
        """A cancel answers a JSON object; anything else is a turn, answered as a stream of event objects."""
        if is_cancel(payload):
            return self.cancel(payload, session_id)
        return self.turn(payload, session_id)

    def cancel(self, payload: dict[str, Any], session_id: str | None) -> dict[str, Any]:
        try:
            request_id = parse_cancel(payload).request_id
        except ProtocolError as exc:
            return {"cancelled": [], "error": exc.message}
        turns = self.sessions.running(session_id=session_id, request_id=request_id)
        if session_id is not None:
            turns = [t for t in turns if t.session_id == session_id]
        for turn in turns:
            turn.cancel.set()
        logger.info("cancel (session %s, request %s): %d turn(s)", session_id, request_id, len(turns))
        return {"cancelled": [t.request_id for t in turns]}

    async def turn(self, payload: Any, session_id: str | None) -> AsyncIterator[dict[str, Any]]:
        """The turn's events as JSON objects; exactly one terminal event, never a stack trace."""
        fallback_id = _request_id_of(payload) or uuid.uuid4().hex
        try:
            parsed = parse_payload(payload if isinstance(payload, dict) else {"prompt": payload})
        except ProtocolError as exc:
            yield event_to_json(AgentError(fallback_id, AgentErrorCode.INVALID_PAYLOAD.value, exc.message))
            return
        request_id = parsed.request_id or fallback_id
        for previous in self.sessions.cancel(session_id=session_id):
            logger.info("barge-in: a new prompt cancels turn %s", previous.request_id)
            try:
                await asyncio.wait_for(previous.finished.wait(), timeout=BARGE_IN_WAIT_S)
            except TimeoutError:
                logger.warning("turn %s did not end within %.0f s of its cancel", previous.request_id, BARGE_IN_WAIT_S)
        try:
            running = self.sessions.start(request_id, session_id)
        except ValueError as exc:
            yield event_to_json(AgentError(request_id, AgentErrorCode.INVALID_PAYLOAD.value, str(exc)))
            return
        terminal_sent = False
        try:
            source = StrandsTextSource(self.sessions.agent_for(session_id), parsed.prompt)
            events = run_turn(
                _turn_request(parsed, request_id, session_id),
                source,
                self.transport,
                settings=self.settings,
                cancel=running.cancel,
            )
            async for event in events:
                terminal_sent = terminal_sent or event.type in TERMINAL_EVENT_TYPES
                yield event_to_json(event)
        except Exception:
            logger.exception("turn %s failed unexpectedly", request_id)
            if not terminal_sent:
                yield event_to_json(_internal_error(request_id))
        finally:
            self.sessions.finish(running)


def _turn_request(parsed: AgentPayload, request_id: str, session_id: str | None) -> TurnRequest:
    return TurnRequest(
        request_id=request_id,
        prompt=parsed.prompt,
        mode=parsed.mode,
        voice=parsed.voice,
        speed=parsed.speed,
        session_id=session_id,
    )


def _request_id_of(payload: Any) -> str | None:
    if isinstance(payload, dict):
        value = payload.get("request_id")
        if isinstance(value, str) and 0 < len(value) <= 128 and value.isprintable():
            return value
    return None


def _internal_error(request_id: str) -> AgentEvent:
    return AgentError(
        request_id, AgentErrorCode.INTERNAL.value, "the agent hit an internal error; the details are in its log"
    )


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
    async def invoke(payload: Any, context: RequestContext) -> AsyncIterator[dict[str, Any]] | dict[str, Any]:
        return await service.handle(payload, context.session_id)

    app.state.service = service
    logger.info("voice agent ready: model %s; TTS via %s", service.config.model_label, service.config.transport.value)
    return app


__all__ = ["VoiceAgentService", "create_app"]
