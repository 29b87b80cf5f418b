"""The front end on the wire: a raw HTTP/2 client (``h2`` over TLS, trusting the local CA) against a scripted
container WebSocket on loopback. Covers what the SDK cannot be made to do on purpose: PARTIAL parts, data on a
finished stream, many streams on one connection, malformed events, every refusal.

The container script answers each JSON message by its ``type``: ``echo`` → the message back as text and two
PCM bytes as binary; ``fragments`` → a text message and a binary message each sent in two fragments; ``big`` →
one 1 MiB binary message; ``abort`` → close 1011 ``engine crashed``; ``close`` → close 1000.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h2.config
import h2.connection
import h2.events
import pytest
import websockets
from smithy_aws_event_stream.events import EventMessage

from relay_local.sagemaker_frontend import SageMakerFrontEnd
from relay_local.sagemaker_frontend.eventstream import decode_message

PATH = "/endpoints/kokoro-tts/invocations-bidirectional-stream"
BIG = os.urandom(1024 * 1024)
WAIT_S = 10.0


@dataclass
class ContainerLog:
    """What the scripted container received: (kind, data, count of non-empty fragments) per message, and
    close codes."""

    messages: list[tuple[str, bytes, int]] = field(default_factory=list)
    closes: list[int | None] = field(default_factory=list)


async def _container(websocket: Any, log: ContainerLog) -> None:
    try:
        while True:
            fragments = [fragment async for fragment in websocket.recv_streaming()]
            text = isinstance(fragments[0], str)
            data = "".join(fragments).encode() if text else b"".join(fragments)
            log.messages.append(("text" if text else "binary", data, len([f for f in fragments if f])))
            kind = json.loads(data).get("type")
            if kind == "echo":
                await websocket.send(data.decode())
                await websocket.send(b"\x01\x02")
            elif kind == "fragments":
                await websocket.send(["ab", "cé"])
                await websocket.send([b"12", b"34"])
            elif kind == "big":
                await websocket.send(BIG)
            elif kind == "abort":
                await websocket.close(1011, "engine crashed")
            elif kind == "close":
                await websocket.close(1000)
    except websockets.ConnectionClosed as closed:
        log.closes.append(closed.rcvd.code if closed.rcvd is not None else None)


@dataclass
class Scripted:
    front: SageMakerFrontEnd
    log: ContainerLog
    container_port: int


@pytest.fixture
def scripted(sagemaker_tls_dir: Path) -> Iterator[Scripted]:
    """The front end (signature checks off: the raw client does not sign) before the scripted container."""
    log = ContainerLog()
    ready: asyncio.Future[int] | None = None
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()

    async def serve() -> None:
        async with websockets.serve(lambda ws: _container(ws, log), "127.0.0.1", 0) as server:
            assert ready is not None
            ready.set_result(server.sockets[0].getsockname()[1])
            await stop.wait()

    import threading  # noqa: PLC0415

    ready = loop.create_future()
    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    port = asyncio.run_coroutine_threadsafe(_result(ready), loop).result(WAIT_S)
    front = SageMakerFrontEnd(
        f"ws://127.0.0.1:{port}/invocations-bidirectional-stream",
        verify_signatures=False,
        tls_dir=sagemaker_tls_dir,
        endpoints={"dead": "ws://127.0.0.1:9/invocations-bidirectional-stream"},
    ).start()
    try:
        yield Scripted(front=front, log=log, container_port=port)
    finally:
        front.stop()
        loop.call_soon_threadsafe(stop.set)
        thread.join(WAIT_S)


async def _result(future: asyncio.Future[int]) -> int:
    return await future


# --- a raw HTTP/2 client -----------------------------------------------------------------------------------


@dataclass
class Response:
    """One stream's response as the client saw it."""

    headers: dict[str, str] = field(default_factory=dict)
    body: bytearray = field(default_factory=bytearray)
    got_headers: asyncio.Event = field(default_factory=asyncio.Event)
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    reset: bool = False

    def events(self) -> list[EventMessage]:
        """The whole event-stream messages of the body so far."""
        messages, data = [], bytes(self.body)
        while len(data) >= 4:
            length = int.from_bytes(data[:4], "big")
            if len(data) < length:
                break  # the rest of this message is still on its way
            messages.append(decode_message(data[:length]))
            data = data[length:]
        return messages


class H2Client:
    """A minimal HTTP/2 client over TLS for the front end; acknowledges all data it receives."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.reader, self.writer = reader, writer
        self.responses: dict[int, Response] = {}
        self.window_changed = asyncio.Event()
        self.conn.initiate_connection()
        self._flush()
        self._task = asyncio.create_task(self._read())

    def _flush(self) -> None:
        self.writer.write(self.conn.data_to_send())

    async def _read(self) -> None:
        while data := await self.reader.read(65536):
            for event in self.conn.receive_data(data):
                response = self.responses.get(getattr(event, "stream_id", 0) or 0)
                if isinstance(event, h2.events.ResponseReceived) and response is not None:
                    response.headers = {str(k): str(v) for k, v in event.headers or []}
                    response.got_headers.set()
                elif isinstance(event, h2.events.DataReceived):
                    self.conn.acknowledge_received_data(event.flow_controlled_length or 0, event.stream_id or 0)
                    if response is not None:
                        response.body += event.data or b""
                        response.changed.set()
                elif isinstance(event, h2.events.WindowUpdated):
                    self.window_changed.set()
                elif isinstance(event, h2.events.StreamEnded) and response is not None:
                    response.ended.set()
                    response.changed.set()
                elif isinstance(event, h2.events.StreamReset) and response is not None:
                    response.reset = True
                    response.ended.set()
                    response.changed.set()
            self._flush()

    def open(self, path: str = PATH) -> int:
        stream_id: int = self.conn.get_next_available_stream_id()
        self.responses[stream_id] = Response()
        self.conn.send_headers(
            stream_id,
            [
                (":method", "POST"),
                (":scheme", "https"),
                (":authority", "localhost"),
                (":path", path),
                ("content-type", "application/vnd.amazon.eventstream"),
            ],
        )
        self._flush()
        return stream_id

    def send(self, stream_id: int, data: bytes, *, end: bool = False) -> None:
        """Send raw body bytes (within the peer's window: tests send small amounts or wait)."""
        self.conn.send_data(stream_id, data, end_stream=end)
        self._flush()

    def send_part(self, stream_id: int, data: bytes, **headers: str) -> None:
        inner = EventMessage(headers={":message-type": "event", ":event-type": "PayloadPart", **headers}, payload=data)
        self.send(stream_id, EventMessage(payload=inner.encode()).encode())

    def end_input(self, stream_id: int) -> None:
        self.send(stream_id, EventMessage().encode(), end=True)

    async def wait(self, stream_id: int, count: int) -> list[EventMessage]:
        """Wait until the stream's body holds ``count`` events (or ended); returns them."""
        response = self.responses[stream_id]
        async with asyncio.timeout(WAIT_S):
            while len(response.events()) < count and not response.ended.is_set():
                response.changed.clear()
                await response.changed.wait()
        return response.events()

    async def close(self) -> None:
        self._task.cancel()
        self.writer.close()


@asynccontextmanager
async def h2_client(front: SageMakerFrontEnd) -> AsyncIterator[H2Client]:
    context = ssl.create_default_context(cafile=front.ca_file)
    context.set_alpn_protocols(["h2"])
    reader, writer = await asyncio.open_connection("127.0.0.1", front.port, ssl=context, server_hostname="localhost")
    client = H2Client(reader, writer)
    try:
        yield client
    finally:
        await client.close()


def _json(message: bytes, kind: str, **extra: Any) -> bytes:
    return json.dumps({"type": kind, **extra}).encode()


def _parts(events: list[EventMessage]) -> list[tuple[str, str, bytes]]:
    return [(str(e.headers["DataType"]), str(e.headers["CompletionState"]), e.payload) for e in events]


# --- tests -------------------------------------------------------------------------------------------------


def test_parts_and_frames_map_both_ways_and_a_normal_close_ends_the_response(scripted: Scripted) -> None:
    async def go() -> tuple[H2Client, Response, list[EventMessage]]:
        async with h2_client(scripted.front) as client:
            stream = client.open()
            client.send_part(stream, _json(b"", "echo"), DataType="UTF8", CompletionState="COMPLETE")
            client.send_part(stream, b'{"type":', DataType="BINARY", CompletionState="PARTIAL")
            client.send_part(stream, b'"fragments"}', DataType="BINARY", CompletionState="COMPLETE")
            client.send_part(stream, _json(b"", "close"))  # no DataType: a binary frame
            events = await client.wait(stream, 8)
            response = client.responses[stream]
            await asyncio.wait_for(response.ended.wait(), WAIT_S)
            return client, response, events

    _, response, events = asyncio.run(go())
    assert response.headers[":status"] == "200"
    assert response.headers["content-type"] == "application/vnd.amazon.eventstream"
    assert all(e.headers[":event-type"] == "PayloadPart" for e in events)
    assert _parts(events) == [
        ("UTF8", "COMPLETE", _json(b"", "echo")),
        ("BINARY", "COMPLETE", b"\x01\x02"),
        # websockets ends a fragmented message with an empty final frame: every frame is one part
        ("UTF8", "PARTIAL", b"ab"),
        ("UTF8", "PARTIAL", "cé".encode()),
        ("UTF8", "COMPLETE", b""),
        ("BINARY", "PARTIAL", b"12"),
        ("BINARY", "PARTIAL", b"34"),
        ("BINARY", "COMPLETE", b""),
    ]
    assert not response.reset
    # UTF8 → text frame; PARTIAL + COMPLETE → one message in two fragments; no DataType → binary frame
    assert scripted.log.messages == [
        ("text", _json(b"", "echo"), 1),
        ("binary", b'{"type":"fragments"}', 2),
        ("binary", _json(b"", "close"), 1),
    ]


def test_data_on_a_finished_stream_never_stalls_other_streams(scripted: Scripted) -> None:
    async def go() -> list[EventMessage]:
        async with h2_client(scripted.front) as client:
            finished = client.open()
            client.send_part(finished, _json(b"", "close"), DataType="UTF8")
            await asyncio.wait_for(client.responses[finished].ended.wait(), WAIT_S)
            other = client.open()
            # The client keeps sending on the finished stream: more than the connection's initial window.
            chunk = EventMessage(payload=b"x" * 16000).encode()
            for _ in range(12):
                async with asyncio.timeout(WAIT_S):
                    while client.conn.local_flow_control_window(finished) < len(chunk):
                        client.window_changed.clear()
                        await client.window_changed.wait()
                client.send(finished, chunk)
            client.send_part(other, _json(b"", "echo"), DataType="UTF8")
            events = await client.wait(other, 2)
            client.end_input(finished)
            assert not client.responses[finished].reset
            return events

    events = asyncio.run(go())
    assert _parts(events)[:1] == [("UTF8", "COMPLETE", _json(b"", "echo"))]


def test_many_concurrent_streams_on_one_connection_stay_separate(scripted: Scripted) -> None:
    async def go() -> list[list[EventMessage]]:
        async with h2_client(scripted.front) as client:
            streams = [client.open() for _ in range(6)]
            for i, stream in enumerate(streams):
                client.send_part(stream, _json(b"", "echo", n=i), DataType="UTF8")
            results = [await client.wait(stream, 2) for stream in streams]
            for stream in streams:
                client.send_part(stream, _json(b"", "close"), DataType="UTF8")
            for stream in streams:
                await asyncio.wait_for(client.responses[stream].ended.wait(), WAIT_S)
            return results

    results = asyncio.run(go())
    for i, events in enumerate(results):
        assert _parts(events)[:2] == [
            ("UTF8", "COMPLETE", _json(b"", "echo", n=i)),
            ("BINARY", "COMPLETE", b"\x01\x02"),
        ]


def test_a_large_frame_crosses_flow_control_intact(scripted: Scripted) -> None:
    async def go() -> list[EventMessage]:
        async with h2_client(scripted.front) as client:
            stream = client.open()
            client.send_part(stream, _json(b"", "big"), DataType="UTF8")
            return await client.wait(stream, 1)

    (event,) = asyncio.run(go())
    assert event.payload == BIG and event.headers["DataType"] == "BINARY"


def test_abnormal_close_is_a_model_stream_error_with_code_and_reason(scripted: Scripted) -> None:
    async def go() -> tuple[Response, list[EventMessage]]:
        async with h2_client(scripted.front) as client:
            stream = client.open()
            client.send_part(stream, _json(b"", "abort"), DataType="UTF8")
            events = await client.wait(stream, 1)
            await asyncio.wait_for(client.responses[stream].ended.wait(), WAIT_S)
            return client.responses[stream], events

    response, (event,) = asyncio.run(go())
    assert response.headers[":status"] == "200" and not response.reset
    assert event.headers[":message-type"] == "exception"
    assert event.headers[":exception-type"] == "ModelStreamError"
    body = json.loads(event.payload)
    assert body["ErrorCode"] == "ModelError"
    assert "1011" in body["Message"] and "engine crashed" in body["Message"]


def test_client_ending_its_input_closes_the_websocket_normally(scripted: Scripted) -> None:
    async def go() -> Response:
        async with h2_client(scripted.front) as client:
            stream = client.open()
            client.send_part(stream, _json(b"", "echo"), DataType="UTF8")
            await client.wait(stream, 2)
            client.end_input(stream)
            await asyncio.wait_for(client.responses[stream].ended.wait(), WAIT_S)
            return client.responses[stream]

    response = asyncio.run(go())
    assert len(response.events()) == 2 and not response.reset
    # The container sees the close on its own thread, possibly after the client saw its stream end.
    deadline = time.monotonic() + WAIT_S
    while not scripted.log.closes and time.monotonic() < deadline:
        time.sleep(0.02)
    assert scripted.log.closes == [1000]


def test_a_malformed_event_ends_only_its_own_stream(scripted: Scripted) -> None:
    async def go() -> tuple[list[EventMessage], list[EventMessage]]:
        async with h2_client(scripted.front) as client:
            bad, good = client.open(), client.open()
            frame = EventMessage(payload=b"garbage").encode()
            client.send(bad, frame[:-1] + bytes([frame[-1] ^ 0xFF]))
            bad_events = await client.wait(bad, 1)
            await asyncio.wait_for(client.responses[bad].ended.wait(), WAIT_S)
            client.send_part(good, _json(b"", "echo"), DataType="UTF8")
            return bad_events, await client.wait(good, 2)

    bad_events, good_events = asyncio.run(go())
    (error,) = bad_events
    assert error.headers[":message-type"] == "error" and error.headers[":error-code"] == "InputValidationError"
    assert "malformed" in str(error.headers[":error-message"])
    assert len(good_events) == 2


@pytest.mark.parametrize(
    ("path", "status", "error_type", "text"),
    [
        ("/endpoints/nope/invocations-bidirectional-stream", "400", "InputValidationError", "Endpoint nope of account"),
        ("/endpoints/dead/invocations-bidirectional-stream", "424", "ModelError", "not reachable"),
        ("/endpoints/kokoro-tts/invocations", "404", "UnknownOperationException", "No operation"),
    ],
)
def test_refusals_carry_sagemakers_status_error_type_and_message(
    scripted: Scripted, path: str, status: str, error_type: str, text: str
) -> None:
    async def go() -> Response:
        async with h2_client(scripted.front) as client:
            stream = client.open(path)
            await asyncio.wait_for(client.responses[stream].ended.wait(), WAIT_S)
            return client.responses[stream]

    response = asyncio.run(go())
    assert response.headers[":status"] == status
    assert response.headers["x-amzn-errortype"] == error_type
    assert text in json.loads(bytes(response.body))["Message"]
