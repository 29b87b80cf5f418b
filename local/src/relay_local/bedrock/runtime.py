"""The local ``bedrock-runtime`` data plane: ``Converse`` and ``ConverseStream`` over the models of a
:class:`~relay_local.bedrock.models.ModelRegistry`, reached by boto3 (and so by Strands' ``BedrockModel``) through
``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``.

- ``POST /model/{modelId}/converse-stream`` → 200 ``application/vnd.amazon.eventstream``: ``messageStart``, one
  ``contentBlockDelta`` per token the moment it exists, ``contentBlockStop``, ``messageStop``, ``metadata``.
  When the client closes the stream, generation stops before its next token.
- ``POST /model/{modelId}/converse`` → 200 JSON with the whole reply.
- Errors before a stream, as REST-JSON (``x-amzn-errortype``): 400 ``ValidationException`` (unknown model id, bad
  request), 403 ``AccessDeniedException`` (unsigned), 429 ``ThrottlingException`` (injected). During a stream:
  the ``modelStreamErrorException`` event (injected, or the model failed).

:class:`BedrockFaults` lets a test (or ``relay up``'s operator, from Python) inject throttling and mid-stream
failures; :attr:`BedrockRuntime.active` counts generations whose thread still runs.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from relay_local.aws.errors import aws_error
from relay_local.bedrock import wire
from relay_local.bedrock.generation import Generation
from relay_local.bedrock.models import ModelRegistry, TextModel, UnknownModelError

logger = logging.getLogger(__name__)

THROTTLING_MESSAGE = "Too many requests, please wait before trying again."
MODEL_STREAM_ERROR_MESSAGE = "The model stream was interrupted by an error in the model (injected by a test)."


@dataclass
class _StreamBreak:
    after_tokens: int
    message: str


class BedrockFaults:
    """Faults the next requests meet (thread-safe; each injected fault is used once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._throttles = 0
        self._breaks: list[_StreamBreak] = []

    def throttle(self, count: int = 1) -> None:
        """The next ``count`` requests answer 429 ``ThrottlingException`` (botocore retries some of them itself)."""
        with self._lock:
            self._throttles += count

    def break_stream(self, *, after_tokens: int = 2, count: int = 1, message: str = MODEL_STREAM_ERROR_MESSAGE) -> None:
        """The next ``count`` streams send ``modelStreamErrorException`` after ``after_tokens`` text deltas."""
        with self._lock:
            self._breaks.extend(_StreamBreak(after_tokens, message) for _ in range(count))

    def clear(self) -> None:
        with self._lock:
            self._throttles = 0
            self._breaks.clear()

    def take_throttle(self) -> bool:
        with self._lock:
            if self._throttles <= 0:
                return False
            self._throttles -= 1
            return True

    def take_break(self) -> _StreamBreak | None:
        with self._lock:
            return self._breaks.pop(0) if self._breaks else None


class BedrockRuntime:
    """The routes, the models and the faults. Mount :meth:`routes` on an ASGI app (the local AWS app)."""

    def __init__(self, models: ModelRegistry | None = None) -> None:
        self.models = models or ModelRegistry()
        self.faults = BedrockFaults()
        self.requests = 0
        self._active: set[Generation] = set()
        self.last_request: wire.ConverseRequest | None = None
        """The latest request parsed (tests read the messages a turn sent)."""
        self.last_generation: Generation | None = None
        """The latest generation started (tests read how many tokens it made, and whether it has ended)."""

    @property
    def active(self) -> int:
        """Generations whose model thread has not ended yet."""
        self._active = {g for g in self._active if not g.finished.is_set()}
        return len(self._active)

    async def _prepare(self, request: Request) -> tuple[wire.ConverseRequest, TextModel] | Response:
        self.requests += 1
        if (problem := wire.authorization_problem(request.headers.get("authorization"))) is not None:
            return aws_error(403, "AccessDeniedException", problem)
        if self.faults.take_throttle():
            return aws_error(429, "ThrottlingException", THROTTLING_MESSAGE)
        try:
            parsed = wire.parse_converse_request(request.path_params["model_id"], await request.body())
            model = await asyncio.to_thread(self.models.get, parsed.model_id)
        except wire.ConverseValidationError as exc:
            return aws_error(400, "ValidationException", exc.message)
        except UnknownModelError as exc:
            return aws_error(400, "ValidationException", str(exc))
        self.last_request = parsed
        return parsed, model

    def start_generation(self, parsed: wire.ConverseRequest, model: TextModel) -> Generation:
        """Start ``model`` on ``parsed`` (on a thread of its own) and count it in :attr:`active` until it ends."""
        generation = Generation(model, parsed).start()
        self._active.add(generation)
        self.last_generation = generation
        return generation

    async def converse_stream(self, request: Request) -> Response:
        prepared = await self._prepare(request)
        if isinstance(prepared, Response):
            return prepared
        parsed, model = prepared
        fault = self.faults.take_break()
        generation = self.start_generation(parsed, model)

        async def events() -> AsyncIterator[bytes]:
            deltas = 0
            try:
                yield wire.message_start()
                async for piece in generation.pieces():
                    if fault is not None and deltas >= fault.after_tokens:
                        yield wire.stream_exception(
                            wire.StreamException.MODEL_STREAM_ERROR, fault.message, originalStatusCode=500
                        )
                        return
                    yield wire.content_block_delta(piece)
                    deltas += 1
                if fault is not None:
                    yield wire.stream_exception(wire.StreamException.MODEL_STREAM_ERROR, fault.message)
                    return
                assert generation.stop_reason is not None
                yield wire.content_block_stop()
                yield wire.message_stop(generation.stop_reason)
                yield wire.metadata(generation.usage())
            except Exception as exc:  # noqa: BLE001 - the model failed mid-stream: AWS's modelled stream error
                yield wire.stream_exception(
                    wire.StreamException.MODEL_STREAM_ERROR, f"the {model.model_id} model failed: {exc}"
                )
            finally:
                generation.close()  # also when the client went away (a barge-in): the model stops at once

        return StreamingResponse(
            events(), media_type=wire.EVENT_STREAM_CONTENT_TYPE, headers={"x-amzn-requestid": str(uuid.uuid4())}
        )

    async def converse(self, request: Request) -> Response:
        prepared = await self._prepare(request)
        if isinstance(prepared, Response):
            return prepared
        parsed, model = prepared
        generation = self.start_generation(parsed, model)
        try:
            text = "".join([piece async for piece in generation.pieces()])
        except Exception as exc:  # noqa: BLE001 - reported as AWS reports a model failure
            return aws_error(424, "ModelErrorException", f"the {model.model_id} model failed: {exc}")
        finally:
            generation.close()
        assert generation.stop_reason is not None
        body = wire.converse_response(text, generation.stop_reason, generation.usage())
        return JSONResponse(body, headers={"x-amzn-requestid": str(uuid.uuid4())})

    def routes(self) -> list[Route]:
        return [
            Route("/model/{model_id:path}/converse-stream", self.converse_stream, methods=["POST"]),
            Route("/model/{model_id:path}/converse", self.converse, methods=["POST"]),
        ]


__all__ = ["MODEL_STREAM_ERROR_MESSAGE", "THROTTLING_MESSAGE", "BedrockFaults", "BedrockRuntime"]
