"""relay_core.client.messages: client → gateway actions and the gateway's control messages."""

from __future__ import annotations

import json

import pytest

from relay_core import limits
from relay_core.agent.events import TurnMode, parse_payload
from relay_core.client.messages import (
    VALID_ACTIONS_TEXT,
    Cancel,
    ClientAction,
    ClientErrorCode,
    ConversationStarted,
    NewConversation,
    Rejection,
    Resume,
    SendMessage,
    TurnAccepted,
    check_turn_id,
    error_message,
    new_turn_id,
    parse_client_message,
    serialize,
)
from relay_core.errors import (
    InvalidFieldError,
    InvalidJsonError,
    LimitExceededError,
    ProtocolError,
    RelayError,
    ResumeExpiredError,
    SessionStateError,
    UnknownActionError,
    UnknownMessageTypeError,
    UnknownTurnError,
)
from relay_core.speech_options import SpeechOptions


def test_send_message_with_every_field_round_trips() -> None:
    text = (
        '{"action":"sendMessage","prompt":"こんにちは","voice":"jf_alpha","speed":1.25,"mode":"batch","turn_id":"t-1"}'
    )
    message = parse_client_message(text)
    assert message == SendMessage(
        "こんにちは", options=SpeechOptions("jf_alpha", 1.25), mode=TurnMode.BATCH, turn_id="t-1"
    )
    assert parse_client_message(serialize(message)) == message
    assert parse_client_message(text.encode()) == message


def test_send_message_defaults_match_the_agent_payload() -> None:
    message = parse_client_message({"action": "sendMessage", "prompt": "Hi."})
    assert message == SendMessage("Hi.")
    assert isinstance(message, SendMessage)
    payload = parse_payload({"prompt": "Hi."})
    assert message.to_agent_payload() == payload
    assert message.with_turn_id("t-9").to_agent_payload().request_id == "t-9"
    assert message.to_agent_payload("r-1").request_id == "r-1"


@pytest.mark.parametrize(
    ("obj", "error"),
    [
        ({"action": "sendMessage"}, InvalidFieldError),
        ({"action": "sendMessage", "prompt": "   "}, InvalidFieldError),
        ({"action": "sendMessage", "prompt": 5}, InvalidFieldError),
        ({"action": "sendMessage", "prompt": "x" * (limits.MAX_PROMPT_CHARS + 1)}, LimitExceededError),
        ({"action": "sendMessage", "prompt": "hi", "mode": "stream"}, InvalidFieldError),
        ({"action": "sendMessage", "prompt": "hi", "speed": limits.MAX_SPEED + 0.1}, InvalidFieldError),
        ({"action": "sendMessage", "prompt": "hi", "speed": True}, InvalidFieldError),
        (
            {"action": "sendMessage", "prompt": "hi", "voice": "v" * (limits.MAX_VOICE_SPEC_CHARS + 1)},
            LimitExceededError,
        ),
        ({"action": "sendMessage", "prompt": "hi", "turn_id": "has space"}, InvalidFieldError),
        ({"action": "sendMessage", "prompt": "hi", "turn_id": ""}, InvalidFieldError),
        ({"action": "sendMessage", "prompt": "hi", "turn_id": "x" * (limits.MAX_TURN_ID_CHARS + 1)}, InvalidFieldError),
        ({"action": "cancel", "turn_id": 7}, InvalidFieldError),
        ({"action": "resume", "after_seq": 3}, InvalidFieldError),
        ({"action": "resume", "turn_id": "t-1"}, InvalidFieldError),
        ({"action": "resume", "turn_id": "t-1", "after_seq": -2}, InvalidFieldError),
        ({"action": "resume", "turn_id": "t-1", "after_seq": 1.5}, InvalidFieldError),
        ({"action": "resume", "turn_id": "t-1", "after_seq": True}, InvalidFieldError),
    ],
)
def test_invalid_fields_are_rejected_with_their_code(obj: dict[str, object], error: type[ProtocolError]) -> None:
    with pytest.raises(error) as info:
        parse_client_message(json.dumps(obj))
    assert info.value.code in {c.value for c in ClientErrorCode}


def test_cancel_and_resume_round_trip() -> None:
    assert parse_client_message('{"action":"cancel"}') == Cancel()
    assert parse_client_message('{"action":"cancel","turn_id":"t-1"}') == Cancel("t-1")
    assert parse_client_message('{"action":"resume","turn_id":"t-1","after_seq":-1}') == Resume("t-1", -1)
    for message in (Cancel(), Cancel("a.b:c_d-e"), Resume("t-1", 41)):
        assert parse_client_message(serialize(message)) == message


def test_unknown_fields_are_ignored_for_forward_compatibility() -> None:
    assert parse_client_message('{"action":"cancel","turn_id":"t-1","future":true}') == Cancel("t-1")


def test_new_conversation_round_trips_and_ignores_extra_fields() -> None:
    message = parse_client_message('{"action":"newConversation","turn_id":"t-1"}')
    assert message == NewConversation()
    assert json.loads(serialize(message)) == {"action": "newConversation"}
    assert parse_client_message(serialize(message).encode()) == message


def test_conversation_started_is_a_gateway_control_message() -> None:
    assert json.loads(serialize(ConversationStarted())) == {"type": "conversation_started"}


@pytest.mark.parametrize("body", ['{"action":"newconversation"}', '{"action":"new_conversation"}'])
def test_a_misspelled_new_conversation_is_an_unknown_action_naming_it(body: str) -> None:
    with pytest.raises(UnknownActionError) as info:
        parse_client_message(body)
    assert "newConversation" in info.value.message


@pytest.mark.parametrize("body", ['{"action":"sendmessage"}', '{"prompt":"hi"}', '{"action":5}', '{"action":null}'])
def test_unknown_or_missing_action_names_the_valid_actions(body: str) -> None:
    with pytest.raises(UnknownActionError) as info:
        parse_client_message(body)
    assert info.value.code == ClientErrorCode.UNKNOWN_ACTION.value == "unknown_action"
    assert VALID_ACTIONS_TEXT in info.value.message
    for action in ClientAction:
        assert action.value in info.value.message


@pytest.mark.parametrize("body", [b"\xff\xfe", "not json", "[1, 2]", '"text"', "{"])
def test_malformed_frames_are_invalid_json(body: str | bytes) -> None:
    with pytest.raises(InvalidJsonError) as info:
        parse_client_message(body)
    assert info.value.code == ClientErrorCode.INVALID_JSON


def test_oversize_message_is_limit_exceeded_before_parsing() -> None:
    body = '{"action":"sendMessage","prompt":"' + "x" * limits.CLIENT_MESSAGE_MAX_BYTES + '"}'
    with pytest.raises(LimitExceededError) as info:
        parse_client_message(body)
    assert info.value.code == ClientErrorCode.LIMIT_EXCEEDED


def test_a_full_length_prompt_of_wide_characters_fits_in_one_message() -> None:
    prompt = "語" * limits.MAX_PROMPT_CHARS
    message = SendMessage(prompt, turn_id="t-1")
    assert len(serialize(message).encode()) <= limits.CLIENT_MESSAGE_MAX_BYTES
    assert parse_client_message(serialize(message)) == message


def test_dataclasses_check_their_fields_when_built_directly() -> None:
    with pytest.raises(InvalidFieldError):
        SendMessage("")
    with pytest.raises(InvalidFieldError):
        Resume("t-1", -5)
    with pytest.raises(InvalidFieldError):
        Cancel("bad id")


def test_turn_ids() -> None:
    ids = {new_turn_id() for _ in range(50)}
    assert len(ids) == 50
    for turn_id in ids:
        assert check_turn_id(turn_id) == turn_id
    with pytest.raises(InvalidFieldError, match="turn_id"):
        check_turn_id("é")


def test_gateway_control_messages_serialize_with_their_shape() -> None:
    assert json.loads(serialize(TurnAccepted("t-1"))) == {"type": "turn_accepted", "turn_id": "t-1"}
    rejection = json.loads(serialize(Rejection("rate_limited", "slow down", "t-1")))
    assert rejection == {"type": "error", "code": "rate_limited", "message": "slow down", "turn_id": "t-1"}
    assert "seq" not in rejection
    assert json.loads(serialize(Rejection("invalid_json", "m"))) == {
        "type": "error",
        "code": "invalid_json",
        "message": "m",
    }


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (InvalidJsonError("bad json"), "invalid_json"),
        (InvalidFieldError("bad field"), "invalid_field"),
        (LimitExceededError("too big"), "limit_exceeded"),
        (UnknownActionError("no such action"), "unknown_action"),
        (ResumeExpiredError("too late"), "resume_expired"),
        (UnknownTurnError("no such turn"), "unknown_turn"),
        (UnknownMessageTypeError("unknown type"), "invalid_message"),
        (RelayError("you are too fast", code="rate_limited"), "rate_limited"),
    ],
)
def test_relay_errors_become_client_errors_with_their_message(exc: RelayError, code: str) -> None:
    error = Rejection.from_exception(exc, turn_id="t-1")
    assert (error.code, error.message, error.turn_id) == (code, exc.message, "t-1")


@pytest.mark.parametrize(
    "exc",
    [
        ValueError("secret internal detail at /opt/code.py line 3"),
        KeyError("table"),
        SessionStateError("invalid state detail"),
    ],
)
def test_other_errors_become_internal_error_without_their_text(exc: BaseException) -> None:
    text = error_message(exc)
    obj = json.loads(text)
    assert obj["code"] == ClientErrorCode.INTERNAL.value == "internal_error"
    assert "detail" not in text and "table" not in text and "Traceback" not in text
    assert obj["message"]


def test_mode_given_as_text_is_normalised_or_rejected() -> None:
    message = SendMessage("Hi", mode="batch")  # type: ignore[arg-type]
    assert message.mode is TurnMode.BATCH
    assert json.loads(serialize(message))["mode"] == "batch"
    with pytest.raises(InvalidFieldError, match="mode"):
        SendMessage("Hi", mode="stream")  # type: ignore[arg-type]
