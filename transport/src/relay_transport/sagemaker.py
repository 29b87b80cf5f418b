"""The ``sagemaker`` transport: a TTS session over SageMaker's bidirectional stream (HTTP/2).

``InvokeEndpointWithBidirectionalStream`` (``aws-sdk-sagemaker-runtime-http2`` 0.12, pinned) opens one HTTP/2
request to the runtime host on port 8443; SageMaker connects it to the container's WebSocket
(``/invocations-bidirectional-stream``). Each JSON message goes out as a ``PayloadPart`` event; each response
``PayloadPart`` is one server frame (``UTF8`` = JSON control message, otherwise PCM). See
:mod:`relay_transport.sagemaker_events` for that mapping.

What this transport guarantees:
- one SDK client (one TLS + HTTP/2 connection, multiplexed) kept across sessions and turns by
  :class:`SharedClientStreamOpener`: opening a session is then one new HTTP/2 stream instead of a new client, TCP
  and TLS handshake (measured locally: about a third of the open cost, docs/benchmarks.md). Concurrent sessions
  share the connection; a connection that went away is replaced on the next open (one retry); the client
  belongs to the event loop that made it. The transport is ``AWSCRTHTTPClient`` (the SDK's default, aiohttp,
  has no HTTP/2);
- credentials come from boto3 (:class:`~relay_transport.sagemaker_credentials.BotoCredentialsResolver`),
  so AgentCore execution roles, task and instance roles work;
- the input stream stays open until the output is drained: the agent's ``close`` message makes the container
  finish and close its WebSocket, SageMaker then ends the response body, and only then is the input closed;
- stream errors (``ModelStreamError``, ``InternalStreamFailure``) raise
  :class:`~relay_transport.errors.TtsStreamError` with the stream's code; the end of the response body raises
  :class:`~relay_transport.errors.TtsConnectionClosed` with ``clean=True``; anything that breaks the connection
  raises it with ``clean=False``;
- a session that cannot be opened raises :class:`~relay_transport.errors.TtsUnavailableError` naming what to check.

The SDK sits behind one narrow seam, :class:`BidiStreamOpener` (open a duplex event stream for a request); the
real one, :class:`SdkStreamOpener`, calls the SDK. Tests replace only the network underneath.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

import boto3
from aws_sdk_sagemaker_runtime_http2.client import AsyncSageMakerRuntimeHTTP2Client
from aws_sdk_sagemaker_runtime_http2.config import AsyncSageMakerRuntimeHTTP2Config
from aws_sdk_sagemaker_runtime_http2.models import InvokeEndpointWithBidirectionalStreamInput
from awscrt.exceptions import AwsCrtError
from smithy_core.exceptions import SmithyError
from smithy_http.aio.crt import AWSCRTHTTPClient

from relay_transport.errors import TransportConfigError, TtsConnectionClosed, TtsStreamError, TtsUnavailableError
from relay_transport.sagemaker_credentials import BotoCredentialsResolver
from relay_transport.sagemaker_events import FrameAssembler, request_event, stream_error

logger = logging.getLogger(__name__)

RUNTIME_PORT: Final = 8443
"""SageMaker's HTTP/2 runtime port (the SDK's regional default omits it)."""
ENDPOINT_URL_ENV: Final = "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2"
"""Environment variable that overrides the runtime URL (a local front end, a VPC endpoint)."""

CLOSE_TIMEOUT_S: Final = 2.0
"""Longest wait for one closing step (the input's end frame is flushed only while the peer reads)."""

_STREAM_ERRORS: Final = (SmithyError, OSError, AwsCrtError)
"""What the SDK and its CRT transport raise when a stream or connection fails."""


def default_endpoint_uri(region: str) -> str:
    """The SageMaker HTTP/2 runtime URL for ``region``: ``https://runtime.sagemaker.<region>.amazonaws.com:8443``."""
    return f"https://runtime.sagemaker.{region}.amazonaws.com:{RUNTIME_PORT}"


class InputStream(Protocol):
    """The SDK's input event publisher (``EventPublisher[RequestStreamEvent]``), as this transport uses it."""

    async def send(self, event: Any) -> None:
        """Sign and send one request event; raises ``OSError`` when the stream is gone."""
        ...

    async def close(self) -> None:
        """Send the (signed) end-of-stream frame and close the request body."""
        ...


class OutputStream(Protocol):
    """The SDK's output event receiver (``EventReceiver[ResponseStreamEvent]``), as this transport uses it."""

    async def receive(self) -> Any:
        """The next response event, or None at the end of the body; raises modelled error events."""
        ...

    async def close(self) -> None:
        """Stop reading the response body."""
        ...


class BidiStream(Protocol):
    """The SDK's ``DuplexEventStream`` for one ``InvokeEndpointWithBidirectionalStream`` call."""

    @property
    def input_stream(self) -> InputStream:
        """Where request events go."""
        ...

    async def await_output(self) -> tuple[Any, OutputStream]:
        """Wait for the initial HTTP/2 response; returns the operation output and the event receiver."""
        ...


@dataclass(frozen=True, slots=True)
class OpenedStream:
    """A stream just opened, and how to release what opened it (the per-call SDK client and its connection)."""

    stream: BidiStream
    release: Callable[[], Awaitable[None]]


class BidiStreamOpener(Protocol):
    """Opens one bidirectional stream for a request: the seam between this transport and the SDK's network."""

    async def open(self, request: Any) -> OpenedStream:
        """Start ``invoke_endpoint_with_bidirectional_stream(request)`` and return its duplex stream."""
        ...


HttpClientFactory = Callable[[], Any]
"""Makes the SDK's HTTP transport for one client (``AWSCRTHTTPClient`` unless a test supplies another)."""


class SdkStreamOpener:
    """The real :class:`BidiStreamOpener`: a fresh ``AsyncSageMakerRuntimeHTTP2Client`` per stream.

    The client is configured with ``endpoint_uri`` (port 8443), ``region`` (also the SigV4 signing region),
    boto3-backed ``credentials`` and an HTTP/2-capable transport from ``http_client_factory``."""

    def __init__(
        self,
        *,
        endpoint_uri: str,
        region: str,
        credentials: BotoCredentialsResolver,
        http_client_factory: HttpClientFactory = AWSCRTHTTPClient,
    ) -> None:
        self.endpoint_uri = endpoint_uri
        self.region = region
        self.credentials = credentials
        self._http_client_factory = http_client_factory

    async def config(self) -> Any:
        """The resolved SDK configuration for one client."""
        return await AsyncSageMakerRuntimeHTTP2Config.resolve(
            endpoint_uri=self.endpoint_uri,
            region=self.region,
            transport=self._http_client_factory(),
            aws_credentials_identity_resolver=self.credentials,
        )

    async def open(self, request: Any) -> OpenedStream:
        client = AsyncSageMakerRuntimeHTTP2Client(config=await self.config())
        try:
            stream = await client.invoke_endpoint_with_bidirectional_stream(request)
        except BaseException:
            await client.close()
            raise
        return OpenedStream(stream=stream, release=client.close)


async def _keep_client() -> None:
    """The release of a stream on the shared client: the client outlives its streams."""


class SharedClientStreamOpener:
    """A :class:`BidiStreamOpener` that opens every stream on one SDK client per event loop.

    The first open on a new client holds a lock, so concurrent first sessions share one connection instead of
    racing to make several. If opening a stream fails on a kept client (its connection closed by the peer, an
    idle timeout), the client is dropped and the open retried once on a fresh one; a second failure is raised.
    :meth:`aclose` closes the kept client (the next open makes a new one)."""

    def __init__(self, fresh: SdkStreamOpener) -> None:
        self._fresh = fresh
        self._client: AsyncSageMakerRuntimeHTTP2Client | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None
        self._warm = False
        self.clients_made = 0
        """How many SDK clients this opener has made (1 while the first one keeps working)."""

    async def open(self, request: Any) -> OpenedStream:
        try:
            stream = await self._open_on_kept_client(request)
        except _STREAM_ERRORS as exc:
            logger.debug(
                "opening a stream on the kept SDK client failed (%s: %s); retrying on a fresh client",
                type(exc).__name__,
                exc,
            )
            await self.aclose()
            stream = await self._open_on_kept_client(request)
        return OpenedStream(stream=stream, release=_keep_client)

    async def aclose(self) -> None:
        """Close the kept client (if it belongs to this loop) and forget it."""
        client, loop = self._client, self._loop
        self._client, self._warm = None, False
        if client is not None and loop is asyncio.get_running_loop():
            await client.close()

    async def _open_on_kept_client(self, request: Any) -> Any:
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._lock is None:  # a client (and its lock) belong to one event loop
            self._loop, self._lock, self._client, self._warm = loop, asyncio.Lock(), None, False
        if self._warm and self._client is not None:
            return await self._client.invoke_endpoint_with_bidirectional_stream(request)
        async with self._lock:
            if self._client is None:
                self._client = AsyncSageMakerRuntimeHTTP2Client(config=await self._fresh.config())
                self.clients_made += 1
            stream = await self._client.invoke_endpoint_with_bidirectional_stream(request)
            self._warm = True
            return stream


class SageMakerConnection:
    """One TTS session on an open SageMaker bidirectional stream (implements ``TtsConnection``).

    The initial HTTP/2 response is awaited in the background from the moment the stream opens, so sending
    never waits for it; :meth:`receive` waits for it before the first event."""

    def __init__(self, opened: OpenedStream, *, label: str) -> None:
        self._stream = opened.stream
        self._release = opened.release
        self._label = label
        self._output_task: asyncio.Task[tuple[Any, OutputStream]] = asyncio.create_task(
            self._stream.await_output(), name=f"sagemaker-output {label}"
        )
        self._receiver: OutputStream | None = None
        self._assembler = FrameAssembler()
        self._ended: str | None = None
        self._ended_clean = False
        self._released = False

    async def handshake(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for the initial response; raise ``TtsUnavailableError`` if it failed.

        SageMaker answers the request (200, or an error such as an unknown endpoint) before streaming. If no
        answer came within the window the session is used anyway: a late failure then surfaces from
        :meth:`receive` as an unclean :class:`TtsConnectionClosed`."""
        done, _ = await asyncio.wait({self._output_task}, timeout=timeout_s)
        if not done:
            logger.debug("%s: no initial response within %.1f s; streaming without it", self._label, timeout_s)
            return
        exc = self._output_task.exception()
        if exc is not None:
            await self.aclose()
            raise TtsUnavailableError(_refusal(self._label, exc)) from exc

    async def send(self, frame: str) -> None:
        if self._ended is not None:
            raise TtsConnectionClosed(f"{self._label}: cannot send, the stream {self._ended}", clean=self._ended_clean)
        try:
            await self._stream.input_stream.send(request_event(frame))
        except _STREAM_ERRORS as exc:
            self._end(f"dropped while sending ({type(exc).__name__}: {exc})", clean=False)
            raise TtsConnectionClosed(f"{self._label}: the stream dropped while sending: {exc}") from exc

    async def receive(self) -> str | bytes:
        if self._ended is not None:
            raise TtsConnectionClosed(f"{self._label}: the stream {self._ended}", clean=self._ended_clean)
        receiver = await self._output()
        while True:
            try:
                event = await receiver.receive()
            except _STREAM_ERRORS as exc:
                raise self._fail(exc) from exc
            if event is None:
                if self._assembler.pending:
                    self._end("ended inside a partial payload part", clean=False)
                    raise TtsConnectionClosed(f"{self._label}: the stream ended inside a partial frame")
                self._end("ended (end of the response body)", clean=True)
                await self.aclose()
                raise TtsConnectionClosed(f"{self._label}: the stream ended", clean=True)
            try:
                frame = self._assembler.feed(event)
            except TtsStreamError as exc:
                self._end(f"failed: {exc.code}", clean=False)
                raise
            if frame is not None:
                return frame

    async def aclose(self) -> None:
        """Close the input (its signed end frame), stop reading, and close the per-call client. Idempotent."""
        if self._released:
            return
        self._released = True
        if self._ended is None:
            self._end("was closed by the agent", clean=True)
        refused = self._output_task.done() and not self._output_task.cancelled() and self._output_task.exception()
        if not self._output_task.done():
            self._output_task.cancel()
        try:
            # A refused request has no stream left to end, and nobody would read the end frame.
            if not refused:
                await self._close_quietly("input stream", self._stream.input_stream.close())
            if self._receiver is not None:
                await self._close_quietly("output stream", self._receiver.close())
        finally:
            await self._close_quietly("client", self._release())

    async def _output(self) -> OutputStream:
        if self._receiver is None:
            try:
                _, self._receiver = await self._output_task
            except _STREAM_ERRORS as exc:
                self._end("was refused", clean=False)
                raise TtsConnectionClosed(_refusal(self._label, exc)) from exc
        return self._receiver

    def _fail(self, exc: BaseException) -> TtsStreamError | TtsConnectionClosed:
        error = stream_error(exc)
        if error is not None:
            self._end(f"failed: {error.code}", clean=False)
            return error
        self._end(f"dropped ({type(exc).__name__}: {exc})", clean=False)
        return TtsConnectionClosed(f"{self._label}: the stream dropped: {type(exc).__name__}: {exc}")

    def _end(self, why: str, *, clean: bool) -> None:
        if self._ended is None:
            self._ended = why
            self._ended_clean = clean

    async def _close_quietly(self, what: str, closing: Awaitable[None]) -> None:
        """Await one closing step, bounded: a peer that stopped reading must not hang the agent's turn."""
        try:
            await asyncio.wait_for(closing, CLOSE_TIMEOUT_S)
        except TimeoutError:
            logger.debug("%s: closing the %s took over %.1f s; dropped", self._label, what, CLOSE_TIMEOUT_S)
        except _STREAM_ERRORS as exc:
            logger.debug("%s: closing the %s failed: %s: %s", self._label, what, type(exc).__name__, exc)


def _refusal(label: str, exc: BaseException) -> str:
    code = getattr(exc, "error_code", None) or type(exc).__name__
    return (
        f"SageMaker refused the TTS stream to {label}: {code}: {exc}; check the endpoint name and that it is "
        "InService, the region, the agent's credentials (sagemaker:InvokeEndpointWithBidirectionalStream), and "
        "that the container carries the label com.amazonaws.sagemaker.capabilities.bidirectional-streaming=true"
    )


class SageMakerTransport:
    """Opens TTS sessions on a SageMaker real-time endpoint through its bidirectional stream.

    ``endpoint_uri`` defaults to ``$AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2``, else the regional runtime host on
    port 8443. ``region`` defaults to ``$AWS_REGION``, else boto3's (``AWS_DEFAULT_REGION``, the profile); it is
    also the SigV4 signing region, so it is required. ``target_variant``, ``model_invocation_path`` and
    ``model_query_string`` are passed to SageMaker as given (None = SageMaker's defaults). ``reuse_client``
    (default True) keeps one SDK client across sessions (:class:`SharedClientStreamOpener`); False makes a fresh
    client per session. ``opener`` replaces the SDK call (tests); ``http_client_factory`` replaces only the
    HTTP/2 client under the real SDK (tests)."""

    def __init__(
        self,
        endpoint_name: str,
        region: str | None = None,
        *,
        endpoint_uri: str | None = None,
        target_variant: str | None = None,
        model_invocation_path: str | None = None,
        model_query_string: str | None = None,
        session: boto3.Session | None = None,
        opener: BidiStreamOpener | None = None,
        http_client_factory: HttpClientFactory = AWSCRTHTTPClient,
        reuse_client: bool = True,
        open_timeout_s: float = 10.0,
        handshake_timeout_s: float = 2.0,
        environ: Mapping[str, str] = os.environ,
    ) -> None:
        if not endpoint_name:
            raise TransportConfigError(
                "the sagemaker transport needs an endpoint name (VOICE_AGENT_SAGEMAKER_ENDPOINT)"
            )
        self._session = session if session is not None else boto3.Session(region_name=region)
        resolved_region = region or environ.get("AWS_REGION") or self._session.region_name
        if not resolved_region:
            raise TransportConfigError(
                "the sagemaker transport needs an AWS region (it is also the signing region): "
                "set AWS_REGION or AWS_DEFAULT_REGION"
            )
        self.endpoint_name = endpoint_name
        self.region: str = resolved_region
        self.endpoint_uri: str = endpoint_uri or environ.get(ENDPOINT_URL_ENV) or default_endpoint_uri(self.region)
        self.target_variant = target_variant
        self.model_invocation_path = model_invocation_path
        self.model_query_string = model_query_string
        self.credentials = BotoCredentialsResolver(self._session)
        fresh = SdkStreamOpener(
            endpoint_uri=self.endpoint_uri,
            region=self.region,
            credentials=self.credentials,
            http_client_factory=http_client_factory,
        )
        self._opener: BidiStreamOpener = opener or (SharedClientStreamOpener(fresh) if reuse_client else fresh)
        self.open_timeout_s = open_timeout_s
        self.handshake_timeout_s = handshake_timeout_s

    @property
    def label(self) -> str:
        """How logs and errors name the target: ``endpoint <name> at <uri> (<region>)``."""
        return f"endpoint {self.endpoint_name} at {self.endpoint_uri} ({self.region})"

    def request(self) -> Any:
        """The SDK input for one stream (``InvokeEndpointWithBidirectionalStreamInput``)."""
        return InvokeEndpointWithBidirectionalStreamInput(
            endpoint_name=self.endpoint_name,
            target_variant=self.target_variant,
            model_invocation_path=self.model_invocation_path,
            model_query_string=self.model_query_string,
        )

    async def connect(self) -> SageMakerConnection:
        # Resolve credentials first: a failure inside the SDK's signing step would otherwise only show up as
        # the open timeout (0.12 never completes the stream's request future when signing fails).
        await self.credentials.get_identity(properties={})
        try:
            opened = await asyncio.wait_for(self._opener.open(self.request()), self.open_timeout_s)
        except TimeoutError as exc:
            raise TtsUnavailableError(
                f"the TTS stream to {self.label} did not open within {self.open_timeout_s:.0f} s; check the "
                "network path to the runtime host (port 8443) and the region"
            ) from exc
        except _STREAM_ERRORS as exc:
            raise TtsUnavailableError(_refusal(self.label, exc)) from exc
        connection = SageMakerConnection(opened, label=self.label)
        await connection.handshake(self.handshake_timeout_s)
        logger.info("opened a TTS stream to %s", self.label)
        return connection

    async def aclose(self) -> None:
        """Close the SDK client kept across sessions, if any (open sessions on it end)."""
        if isinstance(self._opener, SharedClientStreamOpener):
            await self._opener.aclose()


__all__ = [
    "ENDPOINT_URL_ENV",
    "RUNTIME_PORT",
    "BidiStream",
    "BidiStreamOpener",
    "InputStream",
    "OpenedStream",
    "OutputStream",
    "SageMakerConnection",
    "SageMakerTransport",
    "SdkStreamOpener",
    "SharedClientStreamOpener",
    "default_endpoint_uri",
]
