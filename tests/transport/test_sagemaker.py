"""The ``sagemaker`` TTS transport against recorded event shapes (tests/events/sagemaker/*.json).

Two levels, both without a network:
- a fake of the SDK's duplex stream that replays the shapes as the SDK's own event classes (and raises the
  error events' values, as the SDK's receiver does), behind the transport's ``BidiStreamOpener`` seam;
- the real SDK end to end (config, SigV4 signing of the request and of every event, event-stream encoding and
  decoding) over a loopback HTTP client that stands in for the HTTP/2 connection only.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from aws_sdk_sagemaker_runtime_http2.models import (
    InternalStreamFailure,
    InvokeEndpointWithBidirectionalStreamOutput,
    ModelStreamError,
    RequestStreamEventPayloadPart,
    ResponsePayloadPart,
    ResponseStreamEventPayloadPart,
)
from smithy_aws_event_stream.events import Event, EventMessage
from smithy_core.aio.types import AsyncBytesReader
from smithy_http import Field, Fields
from smithy_http.aio import HTTPResponse
from smithy_http.aio.crt import AWSCRTHTTPClient

from relay_core.tts.client import AudioReceived, RequestEnded, RequestStarted, TtsClientSession
from relay_core.tts.messages import Synthesize
from relay_transport.errors import TtsConnectionClosed, TtsStreamError, TtsUnavailableError
from relay_transport.sagemaker import (
    ENDPOINT_URL_ENV,
    OpenedStream,
    SageMakerTransport,
    SdkStreamOpener,
)
from relay_transport.sagemaker_events import FrameAssembler

pytestmark = pytest.mark.anyio

EVENTS_DIR = Path(__file__).resolve().parents[1] / "events" / "sagemaker"
FAKE_KEY_ID = "AKIDEXAMPLERELAYTEST"


def recorded(name: str) -> list[dict[str, Any]]:
    """The recorded event shapes of ``tests/events/sagemaker/<name>.json``."""
    shapes: list[dict[str, Any]] = json.loads((EVENTS_DIR / f"{name}.json").read_text())["events"]
    return shapes


def sdk_event(shape: dict[str, Any]) -> Any:
    """The SDK 0.12 object for one recorded shape: a response event, or the error the SDK's receiver raises."""
    ((kind, body),) = shape.items()
    if kind == "PayloadPart":
        return ResponseStreamEventPayloadPart(
            value=ResponsePayloadPart(
                bytes_=base64.b64decode(body["Bytes"]),
                data_type=body.get("DataType"),
                completion_state=body.get("CompletionState"),
            )
        )
    if kind == "ModelStreamError":
        return ModelStreamError(message=body["Message"], error_code=body.get("ErrorCode"))
    assert kind == "InternalStreamFailure"
    return InternalStreamFailure(message=body["Message"])


def wire_event(shape: dict[str, Any]) -> bytes:
    """One recorded shape as ``application/vnd.amazon.eventstream`` bytes, as SageMaker sends it."""
    ((kind, body),) = shape.items()
    if kind == "PayloadPart":
        headers: dict[str, Any] = {":message-type": "event", ":event-type": "PayloadPart"}
        headers |= {key: body[key] for key in ("DataType", "CompletionState") if key in body}
        headers[":content-type"] = "application/octet-stream"
        return EventMessage(headers=headers, payload=base64.b64decode(body["Bytes"])).encode()
    headers = {":message-type": "exception", ":exception-type": kind, ":content-type": "application/json"}
    return EventMessage(headers=headers, payload=json.dumps(body).encode()).encode()


# --- a fake of the SDK's duplex stream ----------------------------------------------------------------------


class Timeline:
    """What happened, in order, across the fake stream's parts."""

    def __init__(self) -> None:
        self.steps: list[str] = []


class RecordingInput:
    """Stands in for the SDK's ``AWSEventPublisher``: records the request events it is given."""

    def __init__(self, timeline: Timeline, close_sent: asyncio.Event) -> None:
        self.events: list[Any] = []
        self.closed = False
        self._timeline = timeline
        self._close_sent = close_sent

    async def send(self, event: Any) -> None:
        if self.closed:
            raise OSError("Attempted to write to closed stream.")
        self.events.append(event)
        message = json.loads(event.value.bytes_)
        self._timeline.steps.append(f"send {message['type']}")
        if message["type"] == "close":
            self._close_sent.set()

    async def close(self) -> None:
        self.closed = True
        self._timeline.steps.append("input closed")


class ReplayOutput:
    """Stands in for the SDK's ``AWSEventReceiver``: replays recorded shapes, then ends after ``close`` was sent."""

    def __init__(self, shapes: list[dict[str, Any]], timeline: Timeline, close_sent: asyncio.Event) -> None:
        self._events = [sdk_event(shape) for shape in shapes]
        self._timeline = timeline
        self._close_sent = close_sent
        self.closed = False

    async def receive(self) -> Any:
        if self._events:
            event = self._events.pop(0)
            if isinstance(event, Exception):
                raise event
            return event
        await self._close_sent.wait()
        self._timeline.steps.append("output ended")
        return None

    async def close(self) -> None:
        self.closed = True


class FakeDuplexStream:
    """Stands in for the SDK's ``DuplexEventStream``."""

    def __init__(self, shapes: list[dict[str, Any]], *, refusal: Exception | None = None) -> None:
        self.timeline = Timeline()
        close_sent = asyncio.Event()
        self.input_stream = RecordingInput(self.timeline, close_sent)
        self.output = ReplayOutput(shapes, self.timeline, close_sent)
        self._refusal = refusal

    async def await_output(self) -> tuple[Any, ReplayOutput]:
        if self._refusal is not None:
            raise self._refusal
        return InvokeEndpointWithBidirectionalStreamOutput(), self.output


class FakeOpener:
    """A ``BidiStreamOpener`` handing out fake streams; counts opens and releases."""

    def __init__(self, shapes: list[dict[str, Any]], *, refusal: Exception | None = None) -> None:
        self._shapes = shapes
        self._refusal = refusal
        self.requests: list[Any] = []
        self.streams: list[FakeDuplexStream] = []
        self.released = 0

    async def open(self, request: Any) -> OpenedStream:
        self.requests.append(request)
        stream = FakeDuplexStream(self._shapes, refusal=self._refusal)
        self.streams.append(stream)

        async def release() -> None:
            stream.timeline.steps.append("client closed")
            self.released += 1

        return OpenedStream(stream=stream, release=release)


@pytest.fixture
def fake_aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Fake static credentials in the environment; no profile files, no instance metadata."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", ENDPOINT_URL_ENV, "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", FAKE_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret-for-tests")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def transport_with(opener: FakeOpener, **kwargs: Any) -> SageMakerTransport:
    return SageMakerTransport("kokoro-tts", "us-east-1", opener=opener, session=boto3.Session(), **kwargs)


async def drain(connection: Any) -> list[str | bytes]:
    frames: list[str | bytes] = []
    while True:
        try:
            frames.append(await connection.receive())
        except TtsConnectionClosed as closed:
            assert closed.clean
            return frames


async def test_frames_map_to_text_and_pcm_and_close_drains(fake_aws_env: None) -> None:
    opener = FakeOpener(recorded("session_text_and_pcm"))
    connection = await transport_with(opener).connect()
    session = TtsClientSession()
    await connection.send(session.synthesize(Synthesize(text="こんにちは。", request_id="r1")))
    await connection.send(session.close())

    frames = await drain(connection)

    assert [type(frame) for frame in frames] == [str, bytes, bytes, str]
    assert frames[1] == bytes(range(16)) and frames[2] == bytes(range(100, 108))
    events = [event for frame in frames for event in session.receive_frame(frame)]
    assert isinstance(events[0], RequestStarted) and isinstance(events[-1], RequestEnded)
    assert b"".join(e.pcm for e in events if isinstance(e, AudioReceived)) == frames[1] + frames[2]
    assert session.idle
    # The input stays open until the output is drained; then input and client are closed, once.
    stream = opener.streams[0]
    assert stream.timeline.steps == ["send synthesize", "send close", "output ended", "input closed", "client closed"]
    await connection.aclose()
    assert opener.released == 1 and stream.output.closed
    with pytest.raises(TtsConnectionClosed):
        await connection.send(session.close())


async def test_request_events_are_sdk_payload_parts_in_utf8(fake_aws_env: None) -> None:
    opener = FakeOpener(recorded("session_text_and_pcm"))
    connection = await transport_with(opener, target_variant="AllTraffic").connect()
    frame = TtsClientSession().synthesize(Synthesize(text="音声", request_id="r9"))
    await connection.send(frame)

    (event,) = opener.streams[0].input_stream.events
    assert isinstance(event, RequestStreamEventPayloadPart)
    assert event.value.bytes_ == frame.encode("utf-8")
    assert (event.value.data_type, event.value.completion_state) == ("UTF8", "COMPLETE")
    (request,) = opener.requests
    assert (request.endpoint_name, request.target_variant) == ("kokoro-tts", "AllTraffic")
    await connection.aclose()
    await connection.aclose()
    assert opener.released == 1


async def test_partial_parts_are_joined_into_whole_frames(fake_aws_env: None) -> None:
    connection = await transport_with(FakeOpener(recorded("partial_parts"))).connect()
    await connection.send(TtsClientSession().close())
    frames = await drain(connection)
    assert [type(frame) for frame in frames] == [str, bytes, str]
    assert json.loads(frames[0])["type"] == "synthesis_start"
    assert frames[1] == bytes(range(16))


@pytest.mark.parametrize(
    ("fixture", "code", "text"),
    [
        ("model_stream_error", "ModelError", "closed the WebSocket with code 1011"),
        ("internal_stream_failure", "InternalStreamFailure", "Try your request again"),
    ],
)
async def test_stream_errors_become_tts_stream_errors(fake_aws_env: None, fixture: str, code: str, text: str) -> None:
    opener = FakeOpener(recorded(fixture))
    connection = await transport_with(opener).connect()
    assert json.loads(await connection.receive())["type"] == "synthesis_start"
    with pytest.raises(TtsStreamError) as failure:
        await connection.receive()
    assert failure.value.code == code and text in failure.value.detail
    with pytest.raises(TtsConnectionClosed) as after:
        await connection.receive()
    assert not after.value.clean
    await connection.aclose()
    assert opener.released == 1


async def test_refused_stream_is_unavailable_and_released(fake_aws_env: None) -> None:
    refusal = OSError("connection refused")
    opener = FakeOpener([], refusal=refusal)
    with pytest.raises(TtsUnavailableError) as failure:
        await transport_with(opener).connect()
    message = str(failure.value)
    for hint in ("kokoro-tts", "us-east-1", "credentials", "bidirectional-streaming=true"):
        assert hint in message
    assert opener.released == 1


async def test_each_connect_opens_a_fresh_stream(fake_aws_env: None) -> None:
    opener = FakeOpener(recorded("session_text_and_pcm"))
    transport = transport_with(opener)
    first, second = await transport.connect(), await transport.connect()
    assert len(opener.streams) == 2
    await first.aclose()
    await second.aclose()
    assert opener.released == 2


def test_assembler_rejects_a_utf8_part_that_is_not_utf8() -> None:
    bad = ResponseStreamEventPayloadPart(value=ResponsePayloadPart(bytes_=b"\xff\xfe", data_type="UTF8"))
    with pytest.raises(TtsStreamError) as failure:
        FrameAssembler().feed(bad)
    assert failure.value.code == "InvalidPayload"


def test_default_endpoint_is_the_regional_runtime_host_on_8443(
    fake_aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    transport = SageMakerTransport("kokoro-tts", "eu-west-1", session=boto3.Session())
    assert transport.endpoint_uri == "https://runtime.sagemaker.eu-west-1.amazonaws.com:8443"
    monkeypatch.setenv(ENDPOINT_URL_ENV, "https://localhost:9443")
    assert (
        SageMakerTransport("kokoro-tts", "eu-west-1", session=boto3.Session()).endpoint_uri == "https://localhost:9443"
    )
    explicit = SageMakerTransport("k", "eu-west-1", endpoint_uri="https://x:1", session=boto3.Session())
    assert explicit.endpoint_uri == "https://x:1"


# --- the real SDK over a loopback HTTP client ------------------------------------------------------------


class LoopbackHttpClient:
    """Stands in for ``AWSCRTHTTPClient`` (the HTTP/2 connection) and nothing else.

    It decodes the signed request events the SDK writes into the request body, and answers with the recorded
    shapes as event-stream bytes once the agent's ``close`` message arrived (or with ``status`` and
    ``error_type`` when given, as SageMaker refuses a request)."""

    SUPPORTS_DUPLEX_STREAMING = True
    TIMEOUT_EXCEPTIONS = ()

    def __init__(self, shapes: list[dict[str, Any]], *, status: int = 200, error_type: str | None = None) -> None:
        self._shapes = shapes
        self._status = status
        self._error_type = error_type
        self.requests: list[Any] = []
        self.envelopes: list[EventMessage] = []
        self.inner: list[EventMessage] = []
        self.closed = False
        self._close_seen = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None

    def __deepcopy__(self, memo: dict[int, Any]) -> LoopbackHttpClient:
        return self

    async def send(self, request: Any, *, request_config: Any = None) -> HTTPResponse:
        self.requests.append(request)
        if self._status != 200:
            fields = Fields([Field(name="x-amzn-errortype", values=[self._error_type or "ValidationError"])])
            body = json.dumps({"Message": "Endpoint kokoro-tts of account 123456789012 not found."}).encode()
            return HTTPResponse(status=self._status, fields=fields, body=body)
        self._reader = asyncio.create_task(self._read(request.body))
        fields = Fields([Field(name="content-type", values=["application/vnd.amazon.eventstream"])])
        return HTTPResponse(status=200, fields=fields, body=self._respond())

    async def _read(self, body: Any) -> None:
        source = AsyncBytesReader(body)
        while (envelope := await Event.decode_async(source)) is not None:
            self.envelopes.append(envelope.message)
            if not envelope.message.payload:
                return
            inner = Event.decode(io.BytesIO(envelope.message.payload))
            assert inner is not None
            self.inner.append(inner.message)
            if json.loads(inner.message.payload).get("type") == "close":
                self._close_seen.set()

    async def _respond(self) -> AsyncIterator[bytes]:
        for shape in self._shapes:
            yield wire_event(shape)
        await self._close_seen.wait()

    async def close(self) -> None:
        self.closed = True
        if self._reader is not None:
            await self._reader


async def test_real_sdk_signs_sends_and_decodes_recorded_events(fake_aws_env: None) -> None:
    http = LoopbackHttpClient(recorded("session_text_and_pcm"))
    transport = SageMakerTransport("kokoro-tts", "us-west-2", session=boto3.Session(), http_client_factory=lambda: http)
    connection = await transport.connect()
    session = TtsClientSession()
    synthesize = session.synthesize(Synthesize(text="こんにちは。", request_id="r1"))
    await connection.send(synthesize)
    await connection.send(session.close())
    frames = await drain(connection)
    await connection.aclose()

    assert [type(frame) for frame in frames] == [str, bytes, bytes, str]
    assert frames[1] == bytes(range(16))
    (request,) = http.requests
    assert request.method == "POST"
    assert request.destination.host == "runtime.sagemaker.us-west-2.amazonaws.com"
    assert request.destination.port == 8443
    assert request.destination.path == "/endpoints/kokoro-tts/invocations-bidirectional-stream"
    authorization = request.fields["authorization"].as_string()
    assert f"Credential={FAKE_KEY_ID}/" in authorization and "/us-west-2/sagemaker/aws4_request" in authorization
    # Every request event is a signed envelope around a PayloadPart; the input closes with a signed empty frame.
    assert [m.headers[":event-type"] for m in http.inner] == ["PayloadPart", "PayloadPart"]
    assert [m.headers["DataType"] for m in http.inner] == ["UTF8", "UTF8"]
    assert http.inner[0].payload == synthesize.encode()
    assert all(":chunk-signature" in envelope.headers for envelope in http.envelopes)
    assert len(http.envelopes) == 3 and http.envelopes[-1].payload == b""
    # The SDK client (and its HTTP/2 connection) outlives the session, for the next one; the transport closes it.
    assert not http.closed
    await transport.aclose()
    assert http.closed


async def test_without_reuse_each_session_closes_its_own_client(fake_aws_env: None) -> None:
    http = LoopbackHttpClient(recorded("model_stream_error"))
    transport = SageMakerTransport(
        "kokoro-tts", "us-west-2", session=boto3.Session(), http_client_factory=lambda: http, reuse_client=False
    )
    connection = await transport.connect()
    assert json.loads(await connection.receive())["type"] == "synthesis_start"
    assert not http.closed
    await connection.aclose()
    assert http.closed


async def test_real_sdk_raises_recorded_model_stream_error(fake_aws_env: None) -> None:
    http = LoopbackHttpClient(recorded("model_stream_error"))
    transport = SageMakerTransport("kokoro-tts", "us-west-2", session=boto3.Session(), http_client_factory=lambda: http)
    connection = await transport.connect()
    assert json.loads(await connection.receive())["type"] == "synthesis_start"
    with pytest.raises(TtsStreamError) as failure:
        await connection.receive()
    assert failure.value.code == "ModelError"
    await connection.aclose()
    await transport.aclose()
    assert http.closed


async def test_real_sdk_refusal_is_unavailable(fake_aws_env: None) -> None:
    http = LoopbackHttpClient([], status=400, error_type="InputValidationError")
    transport = SageMakerTransport("kokoro-tts", "us-west-2", session=boto3.Session(), http_client_factory=lambda: http)
    with pytest.raises(TtsUnavailableError) as failure:
        await transport.connect()
    assert "kokoro-tts" in str(failure.value) and "not found" in str(failure.value)
    await transport.aclose()
    assert http.closed


async def test_sdk_opener_config_uses_crt_boto_credentials_and_8443(fake_aws_env: None) -> None:
    transport = SageMakerTransport("kokoro-tts", "ap-northeast-1", session=boto3.Session())
    opener = SdkStreamOpener(
        endpoint_uri=transport.endpoint_uri, region=transport.region, credentials=transport.credentials
    )
    config = await opener.config()
    assert isinstance(config.transport, AWSCRTHTTPClient)
    assert config.aws_credentials_identity_resolver is transport.credentials
    assert str(config.endpoint_uri) == "https://runtime.sagemaker.ap-northeast-1.amazonaws.com:8443"
    assert config.region == "ap-northeast-1"
    await config.transport.close()
