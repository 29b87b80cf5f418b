"""JSON messages of AWS's event-stream encoding (``application/vnd.amazon.eventstream``), as REST-JSON services
frame the members of a response stream: the Bedrock runtime's ``ConverseStream`` events and the SageMaker
bidirectional stream's exception events. Encoding a single message is ``smithy_aws_event_stream``'s."""

from __future__ import annotations

import json
from collections.abc import Mapping

from smithy_aws_event_stream.events import EventMessage


def json_event(event_type: str, body: Mapping[str, object]) -> bytes:
    """One encoded ``event`` message whose payload is ``body`` as JSON (how REST-JSON services such as
    ``bedrock-runtime`` frame the members of a stream event)."""
    headers = {":message-type": "event", ":event-type": event_type, ":content-type": "application/json"}
    return EventMessage(headers=headers, payload=json.dumps(body).encode()).encode()


def json_exception(exception_type: str, body: Mapping[str, object]) -> bytes:
    """One encoded modelled ``exception`` message (``:exception-type`` names the stream's exception member)."""
    headers = {":message-type": "exception", ":exception-type": exception_type, ":content-type": "application/json"}
    return EventMessage(headers=headers, payload=json.dumps(body).encode()).encode()


__all__ = ["json_event", "json_exception"]
