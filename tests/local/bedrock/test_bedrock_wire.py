"""relay_local.bedrock.wire without sockets: requests, stop sequences, and the event bytes read back by botocore's
own event-stream parser against the bedrock-runtime service model."""

from __future__ import annotations

import json
from typing import Any

import botocore.session
import pytest
from botocore.eventstream import EventStream
from botocore.parsers import EventStreamJSONParser

from relay_local.bedrock import wire
from relay_local.bedrock.models import tokenize


def _body(**members: Any) -> bytes:
    members.setdefault("messages", [{"role": "user", "content": [{"text": "Hi."}]}])
    return json.dumps(members).encode()


def test_a_request_with_system_history_and_inference_config_parses() -> None:
    body = _body(
        system=[{"text": "Be brief."}],
        messages=[
            {"role": "user", "content": [{"text": "One."}]},
            {"role": "assistant", "content": [{"text": "Two."}]},
            {"role": "user", "content": [{"text": "Three"}, {"text": " four."}]},
        ],
        inferenceConfig={"maxTokens": 7, "temperature": 0.5, "topP": 0.9, "stopSequences": ["END"]},
    )
    request = wire.parse_converse_request("local.echo", body)
    assert request.system == "Be brief."
    assert [m.role for m in request.messages] == ["user", "assistant", "user"]
    assert request.last_user_text() == "Three four."
    assert request.inference == wire.InferenceConfig(7, 0.5, 0.9, ("END",))


@pytest.mark.parametrize(
    ("members", "says"),
    [
        ({"messages": []}, "non-empty"),
        ({"messages": [{"role": "assistant", "content": [{"text": "x"}]}]}, "start with a user message"),
        (
            {"messages": [{"role": "user", "content": [{"text": "a"}]}, {"role": "user", "content": [{"text": "b"}]}]},
            "alternate",
        ),
        ({"messages": [{"role": "user", "content": [{"image": {}}]}]}, "text blocks only"),
        ({"inferenceConfig": {"maxTokens": 0}}, "maxTokens"),
        ({"inferenceConfig": {"temperature": 1.5}}, "temperature"),
        ({"inferenceConfig": {"stopSequences": ["a", "b", "c", "d", "e"]}}, "at most 4"),
        ({"toolConfig": {"tools": []}}, "no tools"),
    ],
)
def test_a_request_bedrock_would_refuse_is_a_validation_error_saying_why(members: dict[str, Any], says: str) -> None:
    with pytest.raises(wire.ConverseValidationError, match=says):
        wire.parse_converse_request("local.echo", _body(**members))


def test_stop_scanner_never_sends_part_of_a_stop_sequence_and_cuts_before_it() -> None:
    scanner = wire.StopScanner(["STOP"])
    sent = [scanner.feed(piece) for piece in ["Hello", " wor", "ld S", "TO", "P and more"]]
    assert "".join(sent) == "Hello world "
    assert scanner.stopped
    assert scanner.flush() == ""
    free = wire.StopScanner(["zz"])
    assert free.feed("abc z") == "abc " and free.flush() == "z"
    assert wire.StopScanner([]).feed("as is") == "as is"


def test_tokenize_keeps_every_character() -> None:
    text = "Hello, world!  Two_words; 123 ok…"
    assert "".join(tokenize(text)) == text
    assert tokenize("Hi there.") == ["Hi", " there", "."]


def _parse_stream(events: list[bytes]) -> list[dict[str, Any]]:
    """The bytes as botocore's bedrock-runtime client parses ConverseStream's output (its model and parser)."""
    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    output_shape = model.operation_model("ConverseStream").output_shape
    assert output_shape is not None
    output: Any = output_shape.members["stream"]

    class _Raw:
        def stream(self) -> Any:
            yield b"".join(events)

    return list(EventStream(_Raw(), output, EventStreamJSONParser(), "ConverseStream"))


def test_the_event_bytes_parse_as_bedrock_runtime_events_in_botocores_model() -> None:
    usage = wire.Usage(input_tokens=5, output_tokens=2, latency_ms=12)
    events = _parse_stream(
        [
            wire.message_start(),
            wire.content_block_delta("Hi"),
            wire.content_block_delta(" there"),
            wire.content_block_stop(),
            wire.message_stop(wire.StopReason.MAX_TOKENS),
            wire.metadata(usage),
        ]
    )
    assert events == [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"delta": {"text": "Hi"}, "contentBlockIndex": 0}},
        {"contentBlockDelta": {"delta": {"text": " there"}, "contentBlockIndex": 0}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "max_tokens"}},
        {"metadata": {"usage": {"inputTokens": 5, "outputTokens": 2, "totalTokens": 7}, "metrics": {"latencyMs": 12}}},
    ]


def test_a_stream_exception_is_botocores_modelled_error() -> None:
    from botocore.exceptions import EventStreamError  # noqa: PLC0415

    raw = wire.stream_exception(wire.StreamException.MODEL_STREAM_ERROR, "it broke", originalStatusCode=500)
    with pytest.raises(EventStreamError) as caught:
        _parse_stream([wire.message_start(), raw])
    assert caught.value.response["Error"] == {"Code": "modelStreamErrorException", "Message": "it broke"}


@pytest.mark.parametrize(
    ("header", "ok"),
    [
        (
            "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/bedrock/aws4_request, SignedHeaders=host, Signature=a",
            1,
        ),
        ("Bearer bedrock-api-key-abc", 1),
        (None, 0),
        ("AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/sagemaker/aws4_request, Signature=ab", 0),
        ("Basic dXNlcjpwdw==", 0),
    ],
)
def test_requests_signed_for_bedrock_or_with_an_api_key_are_accepted(header: str | None, ok: int) -> None:
    assert (wire.authorization_problem(header) is None) == bool(ok)
