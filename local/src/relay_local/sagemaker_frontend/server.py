"""The front end's HTTP/2 server: SageMaker's bidirectional-stream API on one side, the container's WebSocket on
the other (asyncio + ``ssl`` with ALPN ``h2`` + ``h2``, and ``websockets`` to the container).

For ``POST /endpoints/<name>/invocations-bidirectional-stream`` it:

- refuses what SageMaker refuses, with its status, ``x-amzn-errortype`` and JSON ``{"Message"}``: an unknown
  endpoint (400 ``InputValidationError``), a bad signature when checks are on (403), a container that refuses
  the WebSocket (424 ``ModelError``);
- otherwise answers 200 (``application/vnd.amazon.eventstream``) once the container accepted the WebSocket, then
  forwards each request ``PayloadPart`` as one WebSocket frame (``DataType`` UTF8 → text, BINARY or absent →
  binary; ``PARTIAL`` parts → one fragmented message) and each container frame back as one response
  ``PayloadPart`` with its ``DataType`` (a fragmented container message → ``PARTIAL`` parts);
- ends the response when the container closes its WebSocket: a normal close (1000/1001) ends the body, any other
  becomes a ``ModelStreamError`` event naming the close code and reason, then the end of the body. The response
  ends even while the client's input is still open: later client data on that stream is acknowledged (flow
  control) and dropped, so other streams on the connection never stall;
- when the client ends its input, closes the WebSocket normally once every part before it was sent.

Many streams run concurrently on one connection; each stream has its own WebSocket and tasks, and a failure
in one stream (a malformed event, a broken container) ends that stream only.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import websockets
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed, ConnectionClosedOK, InvalidHandshake, InvalidStatus

from relay_core.close_codes import GOING_AWAY, NORMAL_CLOSURE
from relay_local.sagemaker_frontend.eventstream import (
    CONTENT_TYPE,
    EnvelopeDecoder,
    EventStreamError,
    RequestPart,
    model_stream_error,
    payload_part,
    request_part,
    unmodeled_error,
)
from relay_local.sagemaker_frontend.sigv4 import (
    EventSignatureChain,
    LocalCredentials,
    SignatureRejected,
    verify_request,
)

logger = logging.getLogger(__name__)

ROUTE: Final = re.compile(r"^/endpoints/(?P<name>[^/?]+)/invocations-bidirectional-stream(?:\?.*)?$")
DEFAULT_ACCOUNT_ID: Final = "123456789012"
DEFAULT_VARIANT: Final = "AllTraffic"
CONTAINER_OPEN_TIMEOUT_S: Final = 5.0
CONTAINER_PING_INTERVAL_S: Final = 60.0
"""SageMaker pings the container's WebSocket every 60 s (the container answers pongs)."""
MAX_CONTAINER_MESSAGE_BYTES: Final = 16 * 1024 * 1024
"""Largest container message accepted: one response PayloadPart cannot carry more than 16 MiB."""
_READ_BYTES: Final = 65536


@dataclass(frozen=True, slots=True)
class Refusal:
    """An HTTP error response as SageMaker sends it: status, ``x-amzn-errortype`` and a JSON body."""

    status: int
    error_type: str
    message: str
    extra: Mapping[str, object] = field(default_factory=dict)

    def body(self) -> bytes:
        return json.dumps({"Message": self.message, **self.extra}).encode("utf-8")


_END: Final = object()
"""Queue marker: the client ended its input."""


@dataclass(slots=True)
class _Failure:
    """Queue item: the stream must end with this event (malformed input, a signature that did not verify)."""

    event: bytes


@dataclass(slots=True)
class _Stream:
    """One bidirectional stream's state on a connection."""

    stream_id: int
    container_url: str
    chain: EventSignatureChain | None
    decoder: EnvelopeDecoder = field(default_factory=EnvelopeDecoder)
    inbound: asyncio.Queue[RequestPart | _Failure | object] = field(default_factory=asyncio.Queue)
    input_open: bool = True
    response_ended: bool = False
    reset: bool = False
    task: asyncio.Task[None] | None = None


class _StreamGone(Exception):  # noqa: N818 - control flow inside this module
    """The client reset the stream or the connection closed: stop sending on it."""


class FrontEndServer:
    """Serves SageMaker's bidirectional-stream API for ``endpoints`` (name → container WebSocket URL).

    ``credentials`` turns the SigV4 checks on (None = accept any signature, as a plain local stand-in).
    Use :meth:`start` and :meth:`close` inside one event loop."""

    def __init__(
        self,
        endpoints: Mapping[str, str],
        *,
        ssl_context: ssl.SSLContext,
        credentials: LocalCredentials | None = None,
        account_id: str = DEFAULT_ACCOUNT_ID,
    ) -> None:
        self.endpoints = dict(endpoints)
        self.credentials = credentials
        self.account_id = account_id
        self._ssl_context = ssl_context
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self.streams_served = 0
        self.connections_accepted = 0

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        """Listen on ``host:port`` (0 = a free port); returns the port."""
        self._server = await asyncio.start_server(self._accept, host, port, ssl=self._ssl_context)
        bound: int = self._server.sockets[0].getsockname()[1]
        return bound

    async def close(self) -> None:
        """Stop listening and end every connection and stream."""
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        self.connections_accepted += 1
        try:
            ssl_object = writer.get_extra_info("ssl_object")
            if ssl_object is None or ssl_object.selected_alpn_protocol() != "h2":
                logger.info("closing a connection that did not negotiate HTTP/2 (ALPN h2)")
                return
            await _Connection(self, reader, writer).run()
        except asyncio.CancelledError:
            # close() ends kept-alive client connections by cancelling them. The task must then end normally:
            # asyncio.start_server's done-callback (Python 3.12) logs a cancelled connection task as an error.
            logger.debug("a client connection was ended by the front end stopping")
        finally:
            self._connections.discard(task)
            writer.close()
            try:
                await writer.wait_closed()
            except (OSError, ssl.SSLError, asyncio.CancelledError):
                logger.debug("the connection closed uncleanly")


class _Connection:
    """One client HTTP/2 connection: reads frames, routes events to streams, writes what h2 produces."""

    def __init__(self, server: FrontEndServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._server = server
        self._reader = reader
        self._writer = writer
        self._h2 = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=False, header_encoding="utf-8", validate_inbound_headers=True)
        )
        self._streams: dict[int, _Stream] = {}
        self._window_changed = asyncio.Event()
        self._closed = False

    async def run(self) -> None:
        self._h2.initiate_connection()
        self._flush()
        try:
            while True:
                data = await self._reader.read(_READ_BYTES)
                if not data:
                    break
                try:
                    events = self._h2.receive_data(data)
                except h2.exceptions.ProtocolError as exc:
                    logger.info("closing an HTTP/2 connection after a protocol error: %s", exc)
                    self._flush()
                    break
                for event in events:
                    self._handle(event)
                self._flush()
                await self._writer.drain()
        except (ConnectionError, ssl.SSLError) as exc:
            logger.debug("the client connection dropped: %s", exc)
        finally:
            self._closed = True
            self._window_changed.set()
            tasks = [stream.task for stream in self._streams.values() if stream.task is not None]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    # --- events from the client ------------------------------------------------------------------------

    def _handle(self, event: h2.events.Event) -> None:
        if isinstance(event, h2.events.RequestReceived):
            self._request(event.stream_id, [(str(name), str(value)) for name, value in event.headers or []])
        elif isinstance(event, h2.events.DataReceived):
            assert event.stream_id is not None
            # Flow control is returned at once, also for streams already finished: a finished stream's data
            # must never hold the connection window that other streams need.
            self._h2.acknowledge_received_data(event.flow_controlled_length or 0, event.stream_id)
            stream = self._streams.get(event.stream_id)
            if stream is not None and not stream.response_ended:
                self._feed(stream, event.data or b"")
        elif isinstance(event, h2.events.StreamEnded):
            stream = self._streams.get(event.stream_id or 0)
            if stream is not None and stream.input_open:
                stream.input_open = False
                stream.inbound.put_nowait(_END)
        elif isinstance(event, h2.events.StreamReset):
            stream = self._streams.get(event.stream_id or 0)
            if stream is not None:
                stream.reset = True
                if stream.task is not None:
                    stream.task.cancel()
        elif isinstance(event, h2.events.WindowUpdated | h2.events.RemoteSettingsChanged):
            self._window_changed.set()

    def _request(self, stream_id: int, headers: list[tuple[str, str]]) -> None:
        fields = {name.lower(): value for name, value in headers}
        method, path = fields.get(":method", ""), fields.get(":path", "")
        route = ROUTE.match(path)
        if method != "POST" or route is None:
            self._refuse(stream_id, Refusal(404, "UnknownOperationException", f"No operation at {method} {path}"))
            return
        name = route.group("name")
        container_url = self._server.endpoints.get(name)
        if container_url is None:
            message = f"Endpoint {name} of account {self._server.account_id} not found."
            self._refuse(stream_id, Refusal(400, "InputValidationError", message))
            return
        chain: EventSignatureChain | None = None
        credentials = self._server.credentials
        if credentials is not None:
            try:
                verified = verify_request(method=method, path=path, headers=fields, credentials=credentials)
            except SignatureRejected as exc:
                self._refuse(stream_id, Refusal(403, exc.error_type, exc.message))
                return
            chain = EventSignatureChain(verified, credentials.secret_access_key)
        stream = _Stream(stream_id=stream_id, container_url=container_url, chain=chain)
        self._streams[stream_id] = stream
        self._server.streams_served += 1
        stream.task = asyncio.create_task(self._serve(stream), name=f"sagemaker-stream {stream_id}")

    def _feed(self, stream: _Stream, data: bytes) -> None:
        try:
            for envelope in stream.decoder.feed(data):
                if stream.chain is not None:
                    stream.chain.verify(envelope.date, envelope.signature, envelope.payload)
                if envelope.is_end:
                    continue  # the signed end frame; END_STREAM follows
                stream.inbound.put_nowait(request_part(envelope))
        except SignatureRejected as exc:
            self._fail_input(stream, unmodeled_error(exc.error_type, exc.message))
        except EventStreamError as exc:
            self._fail_input(stream, unmodeled_error("InputValidationError", str(exc)))

    def _fail_input(self, stream: _Stream, event: bytes) -> None:
        logger.info("stream %d: rejected its input; ending it", stream.stream_id)
        stream.input_open = False
        stream.response_ended = True  # nothing more is read from this stream
        stream.inbound.put_nowait(_Failure(event))

    # --- one stream ------------------------------------------------------------------------------------

    async def _serve(self, stream: _Stream) -> None:
        try:
            websocket = await websockets.connect(
                stream.container_url,
                open_timeout=CONTAINER_OPEN_TIMEOUT_S,
                ping_interval=CONTAINER_PING_INTERVAL_S,
                max_size=MAX_CONTAINER_MESSAGE_BYTES,
                compression=None,
                proxy=None,
            )
        except InvalidStatus as exc:
            status = exc.response.status_code
            message = f'Received server error ({status}) from primary with message "the container refused the '
            message += "WebSocket upgrade\". Check the container's /invocations-bidirectional-stream route."
            self._refuse(stream.stream_id, Refusal(424, "ModelError", message, {"OriginalStatusCode": status}))
            return
        except (OSError, InvalidHandshake, TimeoutError) as exc:
            message = f"The model container is not reachable ({type(exc).__name__}: {exc}); check that it runs."
            self._refuse(stream.stream_id, Refusal(424, "ModelError", message))
            return
        try:
            self._h2.send_headers(
                stream.stream_id,
                [
                    (":status", "200"),
                    ("content-type", CONTENT_TYPE),
                    ("x-amzn-invoked-production-variant", DEFAULT_VARIANT),
                ],
            )
            self._flush()
            upstream = asyncio.create_task(self._upstream(stream, websocket), name="to-container")
            try:
                await self._downstream(stream, websocket, upstream)
            finally:
                upstream.cancel()
                await asyncio.gather(upstream, return_exceptions=True)
        except _StreamGone:
            logger.debug("stream %d: the client went away", stream.stream_id)
        except asyncio.CancelledError:
            logger.debug("stream %d: cancelled (reset by the client or connection closed)", stream.stream_id)
            raise
        finally:
            stream.response_ended = True
            await websocket.close(GOING_AWAY if stream.reset or self._closed else NORMAL_CLOSURE)

    async def _upstream(self, stream: _Stream, websocket: ClientConnection) -> None:
        """Client parts → container frames, in order; PARTIAL parts become one fragmented message."""
        fragments: list[bytes] = []
        first: RequestPart | None = None
        while True:
            item = await stream.inbound.get()
            if isinstance(item, _Failure):
                await self._finish(stream, item.event)
                await websocket.close(NORMAL_CLOSURE)
                return
            if not isinstance(item, RequestPart):  # the client ended its input
                await websocket.close(NORMAL_CLOSURE)
                return
            if first is None:
                first = item
            fragments.append(item.data)
            if not item.is_final:
                continue
            text = first.is_text
            first = None
            try:
                if len(fragments) == 1:
                    await websocket.send(fragments[0], text=text)
                else:
                    await websocket.send(list(fragments), text=text)
            except ConnectionClosed:
                return  # the downstream side reports how the container closed
            fragments.clear()

    async def _downstream(self, stream: _Stream, websocket: ClientConnection, upstream: asyncio.Task[None]) -> None:
        """Container frames → response PayloadParts; the container's close ends the response."""
        while True:
            held: str | bytes | None = None
            try:
                async for fragment in websocket.recv_streaming():
                    if held is not None:
                        await self._send(stream, _part(held, final=False))
                    held = fragment
            except ConnectionClosedOK:
                if not stream.response_ended:
                    await self._finish(stream, None)
                return
            except ConnectionClosed as exc:
                if not stream.response_ended:
                    received = exc.rcvd
                    code = received.code if received is not None else 1006
                    reason = received.reason if received is not None else "no close frame"
                    message = f"The model container closed the WebSocket with code {code} ({reason or 'no reason'})"
                    await self._finish(stream, model_stream_error(message, "ModelError"))
                return
            if held is not None:
                await self._send(stream, _part(held, final=True))
            if upstream.done() and stream.response_ended:
                return

    # --- writing ---------------------------------------------------------------------------------------

    async def _send(self, stream: _Stream, data: bytes, *, end: bool = False) -> None:
        """Send ``data`` on the stream within HTTP/2 flow control, optionally ending it."""
        view = memoryview(data)
        while True:
            if self._closed or stream.reset:
                raise _StreamGone
            try:
                window = min(self._h2.local_flow_control_window(stream.stream_id), self._h2.max_outbound_frame_size)
            except h2.exceptions.StreamClosedError as exc:
                raise _StreamGone from exc
            if view and window <= 0:
                self._window_changed.clear()
                await self._window_changed.wait()
                continue
            chunk, view = view[:window], view[window:]
            last = not view
            try:
                self._h2.send_data(stream.stream_id, bytes(chunk), end_stream=end and last)
            except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError) as exc:
                raise _StreamGone from exc
            self._flush()
            await self._writer.drain()
            if last:
                return

    async def _finish(self, stream: _Stream, event: bytes | None) -> None:
        """End the response body, after ``event`` if given (an exception or error event)."""
        if stream.response_ended and event is None:
            return
        stream.response_ended = True
        await self._send(stream, event or b"", end=True)

    def _refuse(self, stream_id: int, refusal: Refusal) -> None:
        body = refusal.body()
        logger.info("stream %d refused: %d %s", stream_id, refusal.status, refusal.error_type)
        try:
            self._h2.send_headers(
                stream_id,
                [
                    (":status", str(refusal.status)),
                    ("content-type", "application/json"),
                    ("x-amzn-errortype", refusal.error_type),
                    ("content-length", str(len(body))),
                ],
            )
            # Error bodies are small: within the initial window of any client.
            self._h2.send_data(stream_id, body, end_stream=True)
        except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError, h2.exceptions.FlowControlError):
            logger.debug("stream %d: gone before its refusal was sent", stream_id)
        self._flush()

    def _flush(self) -> None:
        data = self._h2.data_to_send()
        if data and not self._writer.is_closing():
            self._writer.write(data)


def _part(fragment: str | bytes, *, final: bool) -> bytes:
    if isinstance(fragment, str):
        return payload_part(fragment.encode("utf-8"), text=True, final=final)
    return payload_part(fragment, text=False, final=final)


__all__ = ["DEFAULT_ACCOUNT_ID", "ROUTE", "FrontEndServer", "Refusal"]
