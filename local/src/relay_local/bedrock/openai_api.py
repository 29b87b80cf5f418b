"""An OpenAI-compatible ``/v1/chat/completions`` over the same local models, so the agent's ``openai`` provider
(Strands' ``OpenAIModel`` through the ``openai`` SDK) runs end to end here as the ``bedrock`` one does.

- ``POST /v1/chat/completions``: ``messages`` (``system``/``user``/``assistant``; content a string or text parts),
  ``max_tokens`` / ``max_completion_tokens``, ``temperature``, ``top_p``, ``stop``; ``stream: true`` answers
  server-sent ``chat.completion.chunk`` objects, one per token, a last chunk with ``finish_reason``, a usage chunk
  when ``stream_options.include_usage``, then ``data: [DONE]``; otherwise one ``chat.completion``.
- ``GET /v1/models``: the model ids.
- Errors as OpenAI shapes them: ``{"error": {"message", "type", "code"}}`` (400 bad request, 404 unknown model).

Closing the stream stops generation before the next token, as on the Bedrock routes.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from relay_local.bedrock import wire
from relay_local.bedrock.models import UnknownModelError
from relay_local.bedrock.runtime import BedrockRuntime

FINISH_REASONS = {
    wire.StopReason.END_TURN: "stop",
    wire.StopReason.STOP_SEQUENCE: "stop",
    wire.StopReason.MAX_TOKENS: "length",
}


def openai_error(status: int, message: str, code: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": "invalid_request_error", "code": code}}, status)


def _content_text(content: object, where: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise wire.ConverseValidationError(f"{where}: the local models take text parts only")
            texts.append(part["text"])
        return "".join(texts)
    raise wire.ConverseValidationError(f"{where}: content must be a string or a list of text parts")


def to_converse(body: dict[str, Any]) -> wire.ConverseRequest:
    """The chat-completions request as the stand-in's :class:`~relay_local.bedrock.wire.ConverseRequest`
    (system messages joined into ``system``; consecutive messages of one role merged)."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise wire.ConverseValidationError("model is required")
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        raise wire.ConverseValidationError("messages must be a non-empty list")
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for index, message in enumerate(raw_messages):
        role = message.get("role") if isinstance(message, dict) else None
        text = _content_text(message.get("content") if isinstance(message, dict) else None, f"messages[{index}]")
        if role in ("system", "developer"):
            system.append(text)
        elif role in ("user", "assistant"):
            if turns and turns[-1]["role"] == role:
                turns[-1]["content"][0]["text"] += "\n" + text
            else:
                turns.append({"role": role, "content": [{"text": text}]})
        else:
            raise wire.ConverseValidationError(f"messages[{index}].role {role!r} is not one the local models take")
    stop = body.get("stop") or []
    inference: dict[str, Any] = {"stopSequences": [stop] if isinstance(stop, str) else stop}
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    if max_tokens is not None:
        inference["maxTokens"] = max_tokens
    for ours, theirs in (("temperature", "temperature"), ("topP", "top_p")):
        if body.get(theirs) is not None:
            inference[ours] = body[theirs]
    raw = {"messages": turns, "inferenceConfig": inference}
    if system:
        raw["system"] = [{"text": "\n".join(system)}]
    return wire.parse_converse_request(model, json.dumps(raw).encode())


def _chunk(completion_id: str, model: str, delta: dict[str, Any], finish: str | None) -> bytes:
    body = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n".encode()


class OpenAiCompatibleApi:
    """The routes over ``runtime``'s models (and its ``active`` count, ``last_request``)."""

    def __init__(self, runtime: BedrockRuntime) -> None:
        self.runtime = runtime

    async def models(self, _: Request) -> Response:
        data = [{"id": m, "object": "model", "owned_by": "kokoro-relay-local"} for m in self.runtime.models.model_ids]
        return JSONResponse({"object": "list", "data": data})

    async def chat_completions(self, request: Request) -> Response:
        try:
            body = json.loads(await request.body())
            if not isinstance(body, dict):
                raise wire.ConverseValidationError("the body must be a JSON object")
            parsed = to_converse(body)
            model = await asyncio.to_thread(self.runtime.models.get, parsed.model_id)
        except ValueError as exc:  # ConverseValidationError is one
            return openai_error(400, str(exc), "invalid_request")
        except UnknownModelError as exc:
            return openai_error(404, str(exc), "model_not_found")
        self.runtime.last_request = parsed
        generation = self.runtime.start_generation(parsed, model)
        completion_id = f"chatcmpl-{uuid.uuid4().hex}"
        if not body.get("stream"):
            try:
                text = "".join([piece async for piece in generation.pieces()])
            finally:
                generation.close()
            assert generation.stop_reason is not None
            usage = generation.usage()
            return JSONResponse(
                {
                    "id": completion_id,
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": parsed.model_id,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": FINISH_REASONS[generation.stop_reason],
                        }
                    ],
                    "usage": _usage(usage),
                }
            )
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        async def events() -> AsyncIterator[bytes]:
            try:
                yield _chunk(completion_id, parsed.model_id, {"role": "assistant", "content": ""}, None)
                async for piece in generation.pieces():
                    yield _chunk(completion_id, parsed.model_id, {"content": piece}, None)
                assert generation.stop_reason is not None
                yield _chunk(completion_id, parsed.model_id, {}, FINISH_REASONS[generation.stop_reason])
                if include_usage:
                    usage = {
                        "id": completion_id,
                        "object": "chat.completion.chunk",
                        "created": int(time.time()),
                        "model": parsed.model_id,
                        "choices": [],
                        "usage": _usage(generation.usage()),
                    }
                    yield f"data: {json.dumps(usage)}\n\n".encode()
                yield b"data: [DONE]\n\n"
            finally:
                generation.close()

        return StreamingResponse(events(), media_type="text/event-stream")

    def routes(self) -> list[Route]:
        return [
            Route("/v1/chat/completions", self.chat_completions, methods=["POST"]),
            Route("/v1/models", self.models, methods=["GET"]),
        ]


def _usage(usage: wire.Usage) -> dict[str, int]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


__all__ = ["OpenAiCompatibleApi", "to_converse"]
