"""The SageMaker bidirectional stream's event framing, as the front end reads and writes it (sans-I/O).

Request body (client → SageMaker): a sequence of ``application/vnd.amazon.eventstream`` messages. Each is a
signing *envelope* (headers ``:date`` and ``:chunk-signature``) whose payload is the encoded *inner* event: a
``PayloadPart`` (``:event-type``) carrying the frame bytes, with ``DataType`` (``UTF8`` → a WebSocket text
frame, ``BINARY`` or absent → binary) and ``CompletionState`` (``PARTIAL`` → more of this frame follows). The
input ends with an envelope whose payload is empty (the signed end frame).

Response body (SageMaker → client): ``PayloadPart`` events, one per container frame, and the exception events
``ModelStreamError`` (``{"Message", "ErrorCode"}``) and ``InternalStreamFailure`` (``{"Message"}``).

Encoding and decoding of single messages is ``smithy_aws_event_stream``'s; this module adds the incremental
framing (HTTP/2 DATA frames split messages anywhere) and the mapping to :class:`RequestPart`.
"""

from __future__ import annotations

import datetime
import io
import struct
from dataclasses import dataclass
from typing import Final

from smithy_aws_event_stream.events import Event, EventMessage
from smithy_aws_event_stream.exceptions import EventError

from relay_local.aws.eventstream import json_exception

CONTENT_TYPE: Final = "application/vnd.amazon.eventstream"
DATA_TYPE_UTF8: Final = "UTF8"
DATA_TYPE_BINARY: Final = "BINARY"
COMPLETION_PARTIAL: Final = "PARTIAL"
COMPLETION_COMPLETE: Final = "COMPLETE"
PAYLOAD_PART: Final = "PayloadPart"
MODEL_STREAM_ERROR: Final = "ModelStreamError"
INTERNAL_STREAM_FAILURE: Final = "InternalStreamFailure"

_PRELUDE: Final = struct.Struct("!II")
_MAX_MESSAGE_BYTES: Final = 16 * 1024 * 1024 + 128 * 1024 + 16
"""The event stream's own ceiling: a 16 MiB payload, 128 KiB of headers, prelude and CRCs."""


class EventStreamError(ValueError):
    """The request body is not a valid SageMaker request event stream; the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class SignedEnvelope:
    """One request message: the signing headers and the encoded inner event (empty for the end frame)."""

    date: datetime.datetime | None
    signature: bytes | None
    payload: bytes

    @property
    def is_end(self) -> bool:
        """True for the signed empty frame that ends the input."""
        return not self.payload


@dataclass(frozen=True, slots=True)
class RequestPart:
    """One ``PayloadPart`` of the request: bytes of a WebSocket frame and how to send them."""

    data: bytes
    data_type: str | None
    completion_state: str | None

    @property
    def is_text(self) -> bool:
        """``DataType`` ``UTF8`` → text frame; ``BINARY`` or absent → binary frame."""
        return self.data_type == DATA_TYPE_UTF8

    @property
    def is_final(self) -> bool:
        """False when ``CompletionState`` is ``PARTIAL`` (the frame continues in the next part)."""
        return self.completion_state != COMPLETION_PARTIAL


class EnvelopeDecoder:
    """Reassembles request messages from body bytes that arrive in arbitrary pieces."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    @property
    def pending(self) -> int:
        """Bytes held that do not yet form a whole message."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[SignedEnvelope]:
        """The whole messages ``data`` completes; raises :class:`EventStreamError` on a malformed message."""
        self._buffer += data
        envelopes: list[SignedEnvelope] = []
        while len(self._buffer) >= _PRELUDE.size:
            total_length, _ = _PRELUDE.unpack_from(self._buffer)
            if not 16 <= total_length <= _MAX_MESSAGE_BYTES:
                raise EventStreamError(f"an event stream message declares {total_length} bytes; that is not valid")
            if len(self._buffer) < total_length:
                break
            raw = bytes(self._buffer[:total_length])
            del self._buffer[:total_length]
            message = decode_message(raw)
            date = message.headers.get(":date")
            signature = message.headers.get(":chunk-signature")
            envelopes.append(
                SignedEnvelope(
                    date=date if isinstance(date, datetime.datetime) else None,
                    signature=signature if isinstance(signature, bytes) else None,
                    payload=message.payload,
                )
            )
        return envelopes


def decode_message(raw: bytes) -> EventMessage:
    """One whole encoded message; raises :class:`EventStreamError` (bad CRC, bad headers, truncated)."""
    try:
        event = Event.decode(io.BytesIO(raw))
    except (EventError, ValueError, struct.error) as exc:
        raise EventStreamError(f"an event stream message is malformed: {exc}") from exc
    if event is None:
        raise EventStreamError("an event stream message is empty")
    return event.message


def request_part(envelope: SignedEnvelope) -> RequestPart:
    """The ``PayloadPart`` inside ``envelope``; raises :class:`EventStreamError` for anything else."""
    inner = decode_message(envelope.payload)
    message_type = inner.headers.get(":message-type")
    event_type = inner.headers.get(":event-type")
    if message_type != "event" or event_type != PAYLOAD_PART:
        kind = f"{message_type!r}/{event_type!r}"
        raise EventStreamError(f"the request stream carries PayloadPart events only, not {kind}")
    data_type = inner.headers.get("DataType")
    completion = inner.headers.get("CompletionState")
    if data_type not in (None, DATA_TYPE_UTF8, DATA_TYPE_BINARY):
        raise EventStreamError(f"DataType must be UTF8 or BINARY, not {data_type!r}")
    if completion not in (None, COMPLETION_PARTIAL, COMPLETION_COMPLETE):
        raise EventStreamError(f"CompletionState must be PARTIAL or COMPLETE, not {completion!r}")
    return RequestPart(
        data=inner.payload,
        data_type=data_type if isinstance(data_type, str) else None,
        completion_state=completion if isinstance(completion, str) else None,
    )


def payload_part(data: bytes, *, text: bool, final: bool = True) -> bytes:
    """A response ``PayloadPart`` event: ``DataType`` UTF8 for a text frame, BINARY otherwise."""
    headers: dict[str, str] = {
        ":message-type": "event",
        ":event-type": PAYLOAD_PART,
        ":content-type": "application/octet-stream",
        "DataType": DATA_TYPE_UTF8 if text else DATA_TYPE_BINARY,
        "CompletionState": COMPLETION_COMPLETE if final else COMPLETION_PARTIAL,
    }
    return EventMessage(headers=headers, payload=data).encode()


def model_stream_error(message: str, error_code: str) -> bytes:
    """A ``ModelStreamError`` exception event (the container's WebSocket failed or closed abnormally)."""
    return _exception(MODEL_STREAM_ERROR, {"Message": message, "ErrorCode": error_code})


def internal_stream_failure(message: str) -> bytes:
    """An ``InternalStreamFailure`` exception event (the front end itself failed mid-stream)."""
    return _exception(INTERNAL_STREAM_FAILURE, {"Message": message})


def unmodeled_error(code: str, message: str) -> bytes:
    """An unmodelled ``error`` event (``:error-code``, ``:error-message``): a failure outside the API's model,
    such as an event whose chunk signature does not verify."""
    headers = {":message-type": "error", ":error-code": code, ":error-message": message}
    return EventMessage(headers=headers, payload=b"").encode()


def _exception(kind: str, body: dict[str, str]) -> bytes:
    return json_exception(kind, body)


__all__ = [
    "COMPLETION_COMPLETE",
    "COMPLETION_PARTIAL",
    "CONTENT_TYPE",
    "DATA_TYPE_BINARY",
    "DATA_TYPE_UTF8",
    "EnvelopeDecoder",
    "EventStreamError",
    "RequestPart",
    "SignedEnvelope",
    "decode_message",
    "internal_stream_failure",
    "model_stream_error",
    "payload_part",
    "request_part",
    "unmodeled_error",
]
