"""Smoke-test transports in AWS: the SageMaker bidirectional stream (``relay_transport.sagemaker``, the voice agent's
own transport, so there is one implementation of it) and ``invoke_endpoint_with_response_stream`` for
``POST /invocations``.

The transport is relay-functions' ``smoke`` extra: ``relay_transport`` with ``aws-sdk-sagemaker-runtime-http2[awscrt]``
(no Strands, no torch); the ops bundle carries it, the gateway bundle does not (docs/operations.md). The SDK marks
each message ``UTF8``; SageMaker hands it to the container as a WebSocket frame of its choosing (binary, per the
reference), which the local check reproduces by sending binary frames itself.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import boto3

from relay_functions.ops.errors import SmokeCheckError
from relay_functions.ops.smoke_transport import InvocationStream, SessionClosedError, SessionConnection


class SageMakerSession:
    """:class:`~relay_functions.ops.smoke_transport.SessionConnection` over relay_transport's SageMaker transport."""

    def __init__(self, connection: Any) -> None:
        self._connection = connection

    async def send_binary(self, frame: bytes) -> None:
        from relay_transport.errors import TtsConnectionClosed  # noqa: PLC0415

        try:
            await self._connection.send(frame.decode("utf-8"))
        except TtsConnectionClosed as exc:
            raise SessionClosedError(str(exc), clean=exc.clean) from exc

    async def receive(self) -> str | bytes:
        from relay_transport.errors import TtsConnectionClosed, TtsStreamError  # noqa: PLC0415

        try:
            frame: str | bytes = await self._connection.receive()
        except TtsConnectionClosed as exc:
            raise SessionClosedError(str(exc), clean=exc.clean) from exc
        except TtsStreamError as exc:
            raise SmokeCheckError(f"the SageMaker stream reported an error: {exc}") from exc
        return frame

    async def aclose(self) -> None:
        await self._connection.aclose()


def sagemaker_session(endpoint: str) -> Callable[[], Awaitable[SessionConnection]]:
    async def open_session() -> SessionConnection:
        try:
            from relay_transport.sagemaker import SageMakerTransport  # noqa: PLC0415 - heavy SDK, AWS only
        except ImportError as exc:
            raise SmokeCheckError(
                f"this function was bundled without the SageMaker bidirectional transport ({exc}): deploy "
                "smoke_kokoro with the ops bundle, which installs relay-functions[smoke] (docs/operations.md)"
            ) from exc

        region = os.environ.get("AWS_REGION") or boto3.session.Session().region_name or "us-east-1"
        return SageMakerSession(await SageMakerTransport(endpoint_name=endpoint, region=region).connect())

    return open_session


def sagemaker_invocations(endpoint: str) -> InvocationStream:
    def post(body: bytes) -> Iterator[bytes]:
        answer = boto3.client("sagemaker-runtime").invoke_endpoint_with_response_stream(
            EndpointName=endpoint, Body=body, ContentType="application/json", Accept="audio/wav"
        )
        for event in answer["Body"]:
            if "PayloadPart" in event:
                yield event["PayloadPart"]["Bytes"]
            elif "ModelStreamError" in event or "InternalStreamFailure" in event:
                raise SmokeCheckError(
                    f"POST /invocations: the response stream failed: {json.dumps(event, default=str)}"
                )

    return post


__all__ = ["SageMakerSession", "sagemaker_invocations", "sagemaker_session"]
