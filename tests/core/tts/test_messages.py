"""The TTS session protocol: parsing, checking, serializing (ARCHITECTURE §1)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relay_core import limits
from relay_core.errors import InvalidFieldError, InvalidJsonError, LimitExceededError, ProtocolError
from relay_core.speech_options import SpeechOptions
from relay_core.tts.messages import (
    Cancel,
    Close,
    SynthesisCancelled,
    SynthesisComplete,
    SynthesisStart,
    Synthesize,
    TtsFailed,
    parse_client_message,
    parse_server_message,
    serialize,
)


def test_reference_sample_binary_frame_without_type_is_synthesize() -> None:
    frame = json.dumps({"text": "Hello there.", "voice": "jf_alpha", "speed": 1.1, "request_id": "r1"}).encode()
    message = parse_client_message(frame)
    assert message == Synthesize(text="Hello there.", options=SpeechOptions("jf_alpha", 1.1), request_id="r1")


def test_text_and_binary_frames_parse_identically() -> None:
    obj = {"type": "synthesize", "text": "Ça va? 日本語。", "request_id": "x"}
    text = json.dumps(obj, ensure_ascii=False)
    assert parse_client_message(text) == parse_client_message(text.encode("utf-8"))


@pytest.mark.parametrize(
    ("frame", "error", "fragment"),
    [
        (b"\xff\xfe", InvalidJsonError, "UTF-8"),
        ("{not json", InvalidJsonError, "JSON"),
        ("[1, 2]", InvalidJsonError, "object"),
        ('{"type": "dance"}', ProtocolError, "synthesize, cancel, close"),
        ('{"text": ""}', InvalidFieldError, "something to say"),
        ('{"text": 3}', InvalidFieldError, "string"),
        ('{"text": "hi", "speed": 9}', InvalidFieldError, "between 0.25 and 4.0"),
        ('{"text": "hi", "speed": true}', InvalidFieldError, "number"),
        ('{"text": "hi", "speed": NaN}', InvalidFieldError, "between"),
        ('{"text": "hi", "request_id": ""}', InvalidFieldError, "request_id"),
    ],
)
def test_bad_frames_raise_protocol_errors_that_say_what_to_do(
    frame: str | bytes, error: type[ProtocolError], fragment: str
) -> None:
    with pytest.raises(error) as info:
        parse_client_message(frame)
    assert fragment in info.value.message


def test_limits_are_enforced_with_the_request_id_kept() -> None:
    too_long = "a" * (limits.MAX_TEXT_CHARS + 1)
    with pytest.raises(ProtocolError) as info:
        parse_client_message(json.dumps({"text": too_long, "request_id": "big"}))
    assert info.value.code == "limit_exceeded"
    assert info.value.request_id == "big"
    with pytest.raises(LimitExceededError):
        parse_client_message(json.dumps({"text": "x" * (limits.MAX_MESSAGE_BYTES + 10)}))
    with pytest.raises(LimitExceededError):
        parse_client_message(json.dumps({"text": "x", "request_id": "r" * (limits.MAX_REQUEST_ID_CHARS + 1)}))


def test_cancel_and_close() -> None:
    assert parse_client_message('{"type":"cancel"}') == Cancel()
    assert parse_client_message(b'{"type":"cancel","request_id":"a"}') == Cancel(request_id="a")
    assert parse_client_message('{"type":"close"}') == Close()


def test_constructing_an_invalid_message_is_impossible() -> None:
    with pytest.raises(InvalidFieldError):
        Synthesize(text="hi", options=SpeechOptions(speed=0.1))
    with pytest.raises(InvalidFieldError):
        Synthesize(text="   ")


@pytest.mark.parametrize(
    "message",
    [
        Synthesize(text="Hi.", options=SpeechOptions("jf_alpha", 1.5), request_id="r"),
        Synthesize(text="Hi."),
        Cancel(),
        Cancel(request_id="r9"),
        Close(),
    ],
)
def test_client_messages_round_trip(message: Synthesize | Cancel | Close) -> None:
    assert parse_client_message(serialize(message)) == message


@pytest.mark.parametrize(
    "message",
    [
        SynthesisStart(request_id="r", options=SpeechOptions("jf_alpha"), characters=4),
        SynthesisComplete(
            request_id="r", total_duration_s=1.5, elapsed_s=0.4, segments=2, audio_bytes=72000, first_audio_s=0.2
        ),
        SynthesisComplete(
            request_id="r", total_duration_s=0.0, elapsed_s=0.0, segments=0, audio_bytes=0, first_audio_s=None
        ),
        SynthesisCancelled(request_id="r", audio_bytes=10),
        TtsFailed(code="invalid_json", message="nope", request_id=None),
        TtsFailed(code="synthesis_failed", message="boom", request_id="r"),
    ],
)
def test_server_messages_round_trip(
    message: SynthesisStart | SynthesisComplete | SynthesisCancelled | TtsFailed,
) -> None:
    frame = serialize(message)
    assert json.loads(frame)["type"] == message.type
    assert "request_id" in json.loads(frame)
    assert parse_server_message(frame) == message


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=200),
        st.text(max_size=200),
        st.dictionaries(
            st.sampled_from(["type", "text", "voice", "speed", "request_id", "extra"]), json_values, max_size=6
        ).map(lambda d: json.dumps(d)),
        st.fixed_dictionaries(
            {"type": st.sampled_from(["synthesize", "cancel", "close", "x"])},
            optional={"text": json_values, "speed": json_values, "request_id": json_values, "voice": json_values},
        ).map(lambda d: json.dumps(d).encode()),
    )
)
def test_parser_never_raises_anything_but_its_own_errors(frame: str | bytes) -> None:
    try:
        message = parse_client_message(frame)
    except ProtocolError as exc:
        assert exc.message
        assert exc.code
    else:
        # whatever parses must serialize and parse back to itself
        assert parse_client_message(serialize(message)) == message


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.binary(max_size=100), st.text(max_size=100)))
def test_server_parser_never_raises_anything_but_its_own_errors(frame: str | bytes) -> None:
    try:
        parse_server_message(frame)
    except ProtocolError:
        pass
