"""Mapping between TTS session frames and SageMaker bidirectional-stream events (sans-I/O).

SageMaker's ``InvokeEndpointWithBidirectionalStream`` carries WebSocket frames as ``PayloadPart`` events:
``Bytes`` is the frame, ``DataType`` says what kind of frame it is (``UTF8`` = text frame, ``BINARY`` or absent
= binary frame) and ``CompletionState`` says whether a frame continues in the next part (``PARTIAL``) or ends
here (``COMPLETE``, also when absent). SageMaker never joins partial parts itself, so the client must.

This module owns that mapping, on the SDK's own event classes (``aws-sdk-sagemaker-runtime-http2`` 0.12):
- :func:`request_event` turns one JSON message into the request event the SDK sends;
- :class:`FrameAssembler` turns response events back into frames (``str`` for JSON control messages, ``bytes``
  for PCM), joining partial parts;
- :func:`stream_error` turns the stream's error events (``ModelStreamError``, ``InternalStreamFailure``, an
  unmodelled event-stream error) into :class:`~relay_transport.errors.TtsStreamError` with the stream's code.
"""

from __future__ import annotations

import logging
from typing import Final

from aws_sdk_sagemaker_runtime_http2.models import (
    InternalStreamFailure,
    ModelStreamError,
    RequestPayloadPart,
    RequestStreamEventPayloadPart,
    ResponseStreamEvent,
    ResponseStreamEventInternalStreamFailure,
    ResponseStreamEventModelStreamError,
    ResponseStreamEventPayloadPart,
    ResponseStreamEventUnknown,
)
from smithy_aws_event_stream.exceptions import UnmodeledEventError

from relay_transport.errors import TtsStreamError

logger = logging.getLogger(__name__)

DATA_TYPE_UTF8: Final = "UTF8"
"""``DataType`` of a text frame: the bytes are a UTF-8 string."""
DATA_TYPE_BINARY: Final = "BINARY"
"""``DataType`` of a binary frame (also what SageMaker assumes when the header is absent)."""
COMPLETION_PARTIAL: Final = "PARTIAL"
"""``CompletionState`` of a part that continues in the next one."""
COMPLETION_COMPLETE: Final = "COMPLETE"
"""``CompletionState`` of the last (or only) part of a frame."""

REQUEST_DATA_TYPE: Final = DATA_TYPE_UTF8
"""The ``DataType`` the agent sends its JSON messages with.

The messages are UTF-8 JSON, so ``UTF8`` is their honest type, and SageMaker then hands them to the container
as text frames. The container accepts text and binary frames alike (ARCHITECTURE §1; the reference learned that
SageMaker may deliver client messages as binary frames), so either choice works against it."""


def request_event(frame: str) -> RequestStreamEventPayloadPart:
    """The SDK request event that carries one JSON message ``frame`` as a complete UTF-8 text frame."""
    return RequestStreamEventPayloadPart(
        value=RequestPayloadPart(
            bytes_=frame.encode("utf-8"),
            data_type=REQUEST_DATA_TYPE,
            completion_state=COMPLETION_COMPLETE,
        )
    )


def stream_error(error: object) -> TtsStreamError | None:
    """The :class:`TtsStreamError` for an error the stream reported, or None if ``error`` is not one.

    ``error`` is what the SDK raised while receiving (it raises a modelled error event's value) or an error
    event it returned. ``ModelStreamError`` keeps its ``ErrorCode`` (``ModelStreamError`` when absent);
    ``InternalStreamFailure`` has no code in its shape, so its code is ``InternalStreamFailure``."""
    if isinstance(error, ResponseStreamEventModelStreamError | ResponseStreamEventInternalStreamFailure):
        error = error.value
    if isinstance(error, ModelStreamError):
        return TtsStreamError(error.error_code or "ModelStreamError", error.message or "the model stream failed")
    if isinstance(error, InternalStreamFailure):
        return TtsStreamError("InternalStreamFailure", error.message or "SageMaker's stream failed; try again")
    if isinstance(error, UnmodeledEventError):
        return TtsStreamError(error.code, error.message)
    return None


class FrameAssembler:
    """Turns response events into whole frames, joining ``PARTIAL`` payload parts.

    :meth:`feed` returns the frame an event completes, or None when the event completes none (a partial part,
    or an event variant this SDK version does not know, which is logged and skipped). Error events raise
    :class:`TtsStreamError`. A frame takes its type from the ``DataType`` of its parts: ``UTF8`` gives ``str``,
    anything else ``bytes``."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._data_type: str | None = None

    @property
    def pending(self) -> bool:
        """True while a frame has started (a partial part arrived) and is not yet complete."""
        return bool(self._parts)

    def feed(self, event: ResponseStreamEvent) -> str | bytes | None:
        """The frame ``event`` completes, or None; raises :class:`TtsStreamError` for an error event."""
        if isinstance(event, ResponseStreamEventPayloadPart):
            part = event.value
            if not self._parts:
                self._data_type = part.data_type
            self._parts.append(part.bytes_ or b"")
            if part.completion_state == COMPLETION_PARTIAL:
                return None
            data = b"".join(self._parts)
            data_type = self._data_type
            self._parts.clear()
            self._data_type = None
            if data_type == DATA_TYPE_UTF8:
                try:
                    return data.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise TtsStreamError(
                        "InvalidPayload", f"a UTF8 payload part is not valid UTF-8 ({exc.reason} at byte {exc.start})"
                    ) from exc
            return data
        error = stream_error(event)
        if error is not None:
            raise error
        if isinstance(event, ResponseStreamEventUnknown):
            logger.warning("skipping a response event this SDK version does not know: %s", event.tag)
        return None


__all__ = [
    "COMPLETION_COMPLETE",
    "COMPLETION_PARTIAL",
    "DATA_TYPE_BINARY",
    "DATA_TYPE_UTF8",
    "REQUEST_DATA_TYPE",
    "FrameAssembler",
    "request_event",
    "stream_error",
]
