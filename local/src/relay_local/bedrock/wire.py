"""The ``bedrock-runtime`` Converse API's wire shapes, as the local stand-in reads and writes them (sans-I/O).

Checked against botocore's service model (``botocore/data/bedrock-runtime``, REST-JSON, signing name ``bedrock``):

- ``POST /model/{modelId}/converse`` and ``POST /model/{modelId}/converse-stream``: a JSON body with ``messages``
  (``{"role": "user"|"assistant", "content": [{"text": ...}, ...]}``), ``system`` (``[{"text": ...}]``) and
  ``inferenceConfig`` (``maxTokens``, ``temperature``, ``topP``, ``stopSequences``);
  :func:`parse_converse_request` turns it into a :class:`ConverseRequest` or raises :class:`ConverseValidationError`.
- ConverseStream answers ``application/vnd.amazon.eventstream``: ``messageStart``, ``contentBlockDelta`` (one per
  token), ``contentBlockStop``, ``messageStop`` (``stopReason``), ``metadata`` (``usage``, ``metrics.latencyMs``);
  a failure after the stream began is an exception event (``modelStreamErrorException``, ...). Text blocks get no
  ``contentBlockStart``, as Bedrock sends them.
- Converse answers one JSON object (``output.message``, ``stopReason``, ``usage``, ``metrics``).

The stand-in handles text content only: images, documents and tool blocks are refused with a
ValidationException that says so (the voice agent sends none).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from relay_local.aws.eventstream import json_event, json_exception

EVENT_STREAM_CONTENT_TYPE: Final = "application/vnd.amazon.eventstream"
SIGNING_NAME: Final = "bedrock"
"""The service name in a SigV4 credential scope for ``bedrock-runtime`` (the model's ``signingName``)."""
DEFAULT_MAX_TOKENS: Final = 512
"""Tokens generated when ``inferenceConfig.maxTokens`` is absent (each model also has its own ceiling)."""
MAX_STOP_SEQUENCES: Final = 4
ROLES: Final = ("user", "assistant")


class StopReason(StrEnum):
    """``messageStop.stopReason`` values the stand-in produces (a subset of the model's ``StopReason`` enum)."""

    END_TURN = "end_turn"
    MAX_TOKENS = "max_tokens"
    STOP_SEQUENCE = "stop_sequence"


class StreamException(StrEnum):
    """Exception members of ``ConverseStreamOutput``: sent as ``:exception-type`` once the stream has begun."""

    MODEL_STREAM_ERROR = "modelStreamErrorException"
    INTERNAL_SERVER = "internalServerException"
    THROTTLING = "throttlingException"
    VALIDATION = "validationException"
    SERVICE_UNAVAILABLE = "serviceUnavailableException"


class ConverseValidationError(ValueError):
    """The request is not one Bedrock accepts; answered as HTTP 400 ``ValidationException`` with this message."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One turn of the conversation, its text blocks joined."""

    role: str
    text: str


@dataclass(frozen=True, slots=True)
class InferenceConfig:
    """``inferenceConfig``; ``None`` = the model's default (the stand-in decodes greedily without a temperature)."""

    max_tokens: int = DEFAULT_MAX_TOKENS
    temperature: float | None = None
    top_p: float | None = None
    stop_sequences: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ConverseRequest:
    """A parsed, valid Converse/ConverseStream request."""

    model_id: str
    messages: tuple[ChatMessage, ...]
    system: str = ""
    inference: InferenceConfig = field(default_factory=InferenceConfig)
    additional_fields: Mapping[str, Any] = field(default_factory=dict)

    def last_user_text(self) -> str:
        """The text of the latest user message ('' when there is none)."""
        for message in reversed(self.messages):
            if message.role == "user":
                return message.text
        return ""


def _text_blocks(blocks: object, where: str) -> str:
    if not isinstance(blocks, list) or not blocks:
        raise ConverseValidationError(f"{where} must be a non-empty list of content blocks")
    texts: list[str] = []
    for block in blocks:
        if not isinstance(block, dict) or len(block) != 1:
            raise ConverseValidationError(f"each content block of {where} must be an object with exactly one member")
        ((kind, value),) = block.items()
        if kind == "cachePoint":
            continue  # a prompt-caching marker; no content of its own
        if kind != "text":
            raise ConverseValidationError(
                f"{where} has a {kind!r} block: the local Bedrock stand-in handles text blocks only; send text"
            )
        if not isinstance(value, str):
            raise ConverseValidationError(f"a text block of {where} must hold a string")
        texts.append(value)
    return "".join(texts)


def _inference(raw: object) -> InferenceConfig:
    if raw is None:
        return InferenceConfig()
    if not isinstance(raw, dict):
        raise ConverseValidationError("inferenceConfig must be an object")
    unknown = set(raw) - {"maxTokens", "temperature", "topP", "stopSequences"}
    if unknown:
        raise ConverseValidationError(f"inferenceConfig has unknown members {sorted(unknown)}")
    max_tokens = raw.get("maxTokens", DEFAULT_MAX_TOKENS)
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise ConverseValidationError(f"inferenceConfig.maxTokens must be an integer >= 1; got {max_tokens!r}")
    numbers: dict[str, float | None] = {}
    for name in ("temperature", "topP"):
        value = raw.get(name)
        if value is not None and (not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value <= 1):
            raise ConverseValidationError(f"inferenceConfig.{name} must be a number from 0 to 1; got {value!r}")
        numbers[name] = None if value is None else float(value)
    stops = raw.get("stopSequences", [])
    if not isinstance(stops, list) or not all(isinstance(s, str) and s for s in stops):
        raise ConverseValidationError("inferenceConfig.stopSequences must be a list of non-empty strings")
    if len(stops) > MAX_STOP_SEQUENCES:
        raise ConverseValidationError(f"inferenceConfig.stopSequences takes at most {MAX_STOP_SEQUENCES} sequences")
    return InferenceConfig(
        max_tokens=max_tokens, temperature=numbers["temperature"], top_p=numbers["topP"], stop_sequences=tuple(stops)
    )


def parse_converse_request(model_id: str, body: bytes) -> ConverseRequest:
    """The request of ``POST /model/{model_id}/converse[-stream]``; raises :class:`ConverseValidationError`."""
    try:
        raw = json.loads(body or b"{}")
    except ValueError as exc:
        raise ConverseValidationError(f"the request body is not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise ConverseValidationError("the request body must be a JSON object")
    raw_messages = raw.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        raise ConverseValidationError("messages must be a non-empty list; a conversation starts with a user message")
    messages: list[ChatMessage] = []
    for index, message in enumerate(raw_messages):
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            raise ConverseValidationError(f"messages[{index}].role must be 'user' or 'assistant'")
        role = str(message["role"])
        if messages and messages[-1].role == role:
            raise ConverseValidationError(
                "A conversation must alternate between user and assistant roles: "
                f"messages[{index - 1}] and messages[{index}] are both {role!r}"
            )
        messages.append(ChatMessage(role=role, text=_text_blocks(message.get("content"), f"messages[{index}]")))
    if messages[0].role != "user":
        raise ConverseValidationError("A conversation must start with a user message")
    system_blocks = raw.get("system")
    system = "" if system_blocks in (None, []) else _text_blocks(system_blocks, "system")
    extra = raw.get("additionalModelRequestFields") or {}
    if not isinstance(extra, dict):
        raise ConverseValidationError("additionalModelRequestFields must be an object")
    if "toolConfig" in raw:
        raise ConverseValidationError("the local Bedrock stand-in's models take no tools; send no toolConfig")
    return ConverseRequest(
        model_id=model_id,
        messages=tuple(messages),
        system=system,
        inference=_inference(raw.get("inferenceConfig")),
        additional_fields=extra,
    )


class StopScanner:
    """Applies ``stopSequences`` to streamed text: :meth:`feed` returns the text that is safe to send (never a
    piece of a stop sequence that may still complete); once a sequence appears, :attr:`stopped` is True and the
    text before it is all that is sent (the sequence itself is not, as Bedrock omits it)."""

    def __init__(self, stop_sequences: Sequence[str]) -> None:
        self._stops = tuple(stop_sequences)
        self._hold = max((len(s) for s in self._stops), default=1) - 1
        self._pending = ""
        self.stopped = False

    def feed(self, piece: str) -> str:
        if self.stopped:
            return ""
        self._pending += piece
        hits = [i for i in (self._pending.find(s) for s in self._stops) if i >= 0]
        if hits:
            self.stopped = True
            out, self._pending = self._pending[: min(hits)], ""
            return out
        if not self._stops:
            out, self._pending = self._pending, ""
            return out
        cut = max(0, len(self._pending) - self._hold)
        out, self._pending = self._pending[:cut], self._pending[cut:]
        return out

    def flush(self) -> str:
        """The text held back at the end of generation (no stop sequence completed)."""
        out, self._pending = ("" if self.stopped else self._pending), ""
        return out


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts and the generation's wall time, for ``metadata`` / the Converse response."""

    input_tokens: int
    output_tokens: int
    latency_ms: int

    def usage_json(self) -> dict[str, int]:
        return {
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "totalTokens": self.input_tokens + self.output_tokens,
        }


def message_start() -> bytes:
    return json_event("messageStart", {"role": "assistant"})


def content_block_delta(text: str, index: int = 0) -> bytes:
    return json_event("contentBlockDelta", {"delta": {"text": text}, "contentBlockIndex": index})


def content_block_stop(index: int = 0) -> bytes:
    return json_event("contentBlockStop", {"contentBlockIndex": index})


def message_stop(reason: StopReason) -> bytes:
    return json_event("messageStop", {"stopReason": reason.value})


def metadata(usage: Usage) -> bytes:
    return json_event("metadata", {"usage": usage.usage_json(), "metrics": {"latencyMs": usage.latency_ms}})


def stream_exception(kind: StreamException, message: str, **extra: object) -> bytes:
    """An exception event of the stream; ``extra`` e.g. ``originalStatusCode`` for a model stream error."""
    return json_exception(kind.value, {"message": message, **extra})


def converse_response(text: str, reason: StopReason, usage: Usage) -> dict[str, Any]:
    """The Converse (non-streaming) answer body."""
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
        "stopReason": reason.value,
        "usage": usage.usage_json(),
        "metrics": {"latencyMs": usage.latency_ms},
    }


def authorization_problem(header: str | None) -> str | None:
    """What is wrong with the ``Authorization`` header for ``bedrock-runtime`` (None when it is acceptable): a SigV4
    signature whose credential scope names service ``bedrock``, or a Bedrock API key (``Bearer``). The signature
    itself is not recomputed: the local stand-in accepts any key, as moto does."""
    if not header:
        return "Missing Authentication Token: sign the request with SigV4 (boto3 does) or send a Bedrock API key"
    if header.startswith("Bearer "):
        return None
    algorithm, _, rest = header.partition(" ")
    if algorithm != "AWS4-HMAC-SHA256":
        return f"Authorization uses {algorithm!r}; bedrock-runtime accepts AWS4-HMAC-SHA256 or a Bearer API key"
    credential = next((p.split("=", 1)[1] for p in rest.split(", ") if p.startswith("Credential=")), "")
    scope = credential.split("/")
    if len(scope) != 5 or scope[3] != SIGNING_NAME or scope[4] != "aws4_request":
        return f"the credential scope {'/'.join(scope[1:])!r} must be <date>/<region>/{SIGNING_NAME}/aws4_request"
    return None


__all__ = [
    "DEFAULT_MAX_TOKENS",
    "EVENT_STREAM_CONTENT_TYPE",
    "MAX_STOP_SEQUENCES",
    "SIGNING_NAME",
    "ChatMessage",
    "ConverseRequest",
    "ConverseValidationError",
    "InferenceConfig",
    "StopReason",
    "StopScanner",
    "StreamException",
    "Usage",
    "authorization_problem",
    "content_block_delta",
    "content_block_stop",
    "converse_response",
    "message_start",
    "message_stop",
    "metadata",
    "parse_converse_request",
    "stream_exception",
]
