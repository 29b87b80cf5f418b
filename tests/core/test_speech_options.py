"""SpeechOptions: one parser, one serializer, and every request message delegating to them."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from relay_core import limits
from relay_core.agent.events import AgentPayload, parse_payload
from relay_core.client.messages import SendMessage
from relay_core.client.messages import parse_client_message as parse_client_action
from relay_core.errors import InvalidFieldError, LimitExceededError, ProtocolError
from relay_core.fields import encode_json
from relay_core.languages import BY_CODE, LANG_CODES, LANGUAGES
from relay_core.speech_options import DEFAULT_SPEECH, SPEECH_OPTION_FIELDS, SpeechOptions, read_speech_options
from relay_core.tts.http_events import InvocationRequest, parse_invocation, parse_openai_speech
from relay_core.tts.messages import SynthesisStart, Synthesize, parse_client_message, parse_server_message

LONG_VOICE = "v" * (limits.MAX_VOICE_SPEC_CHARS + 1)

BAD_FIELDS: list[tuple[dict[str, Any], type[ProtocolError], str]] = [
    ({"speed": 9}, InvalidFieldError, "'speed' must be between 0.25 and 4.0; got 9"),
    ({"speed": 0.1}, InvalidFieldError, "'speed' must be between 0.25 and 4.0; got 0.1"),
    ({"speed": float("nan")}, InvalidFieldError, "'speed' must be between 0.25 and 4.0; got nan"),
    ({"speed": True}, InvalidFieldError, "'speed' must be a number, not bool"),
    ({"speed": "fast"}, InvalidFieldError, "'speed' must be a number, not str"),
    ({"voice": 7}, InvalidFieldError, "'voice' must be a string, not int"),
    ({"voice": ["jf_alpha"]}, InvalidFieldError, "'voice' must be a string, not list"),
    ({"voice": LONG_VOICE}, LimitExceededError, f"'voice' has {len(LONG_VOICE)} characters; the limit is 256"),
    ({"lang": 5}, InvalidFieldError, "'lang' must be a string, not int"),
    (
        {"lang": "klingon"},
        InvalidFieldError,
        f"'lang' 'klingon' is not one of Kokoro's languages: use one of {LANG_CODES} (or leave it out to use the "
        "voice's language)",
    ),
]


@pytest.mark.parametrize(("fields", "error", "message"), BAD_FIELDS)
def test_the_parser_refuses_each_bad_field_with_its_message_and_the_request_id(
    fields: dict[str, Any], error: type[ProtocolError], message: str
) -> None:
    with pytest.raises(error) as caught:
        read_speech_options(fields, request_id="r7")
    assert type(caught.value) is error
    assert (caught.value.message, caught.value.request_id) == (message, "r7")


@pytest.mark.parametrize(("fields", "error", "message"), BAD_FIELDS)
def test_constructing_bad_options_raises_what_the_parser_raises(
    fields: dict[str, Any], error: type[ProtocolError], message: str
) -> None:
    with pytest.raises(error) as caught:
        SpeechOptions(**fields)
    assert type(caught.value) is error and caught.value.message == message


def test_absent_fields_are_the_defaults_and_an_empty_voice_is_the_default_voice() -> None:
    assert read_speech_options({}) == DEFAULT_SPEECH == SpeechOptions(None, limits.DEFAULT_SPEED)
    assert read_speech_options({"voice": "", "speed": None}) == DEFAULT_SPEECH
    parsed = read_speech_options({"voice": "jf_alpha:0.7,jm_kumo:0.3", "speed": 2})
    assert parsed == SpeechOptions("jf_alpha:0.7,jm_kumo:0.3", 2.0)
    assert isinstance(parsed.speed, float)
    with pytest.raises(InvalidFieldError, match="leave it out"):
        SpeechOptions(voice="")
    with pytest.raises(InvalidFieldError, match="'speed' must be a number"):
        SpeechOptions(speed=None)  # type: ignore[arg-type]


def test_the_fields_are_flat_voice_only_when_set_then_speed() -> None:
    assert DEFAULT_SPEECH.to_json_fields() == {"speed": 1.0}
    assert list(SpeechOptions("jf_alpha", 1.25).to_json_fields().items()) == [("voice", "jf_alpha"), ("speed", 1.25)]
    assert set(SpeechOptions("v", lang="es").to_json_fields()) == set(SPEECH_OPTION_FIELDS)
    assert list(SpeechOptions(speed=1.0, lang="Z").to_json_fields().items()) == [("speed", 1.0), ("lang", "zh")]
    assert DEFAULT_SPEECH.with_voice("jm_kumo") == SpeechOptions("jm_kumo")


options_strategy = st.builds(
    SpeechOptions,
    voice=st.none() | st.text(min_size=1, max_size=limits.MAX_VOICE_SPEC_CHARS),
    speed=st.floats(min_value=limits.MIN_SPEED, max_value=limits.MAX_SPEED),
    lang=st.none() | st.sampled_from([language.code for language in LANGUAGES]),
)


@given(options_strategy)
def test_parsing_the_serialized_fields_gives_the_options_back(options: SpeechOptions) -> None:
    assert read_speech_options(options.to_json_fields()) == options
    assert read_speech_options(json.loads(encode_json(options.to_json_fields()))) == options


def _refusal(parse: Callable[[], object]) -> tuple[type[ProtocolError], str]:
    with pytest.raises(ProtocolError) as caught:
        parse()
    return type(caught.value), caught.value.message


def _routes(fields: dict[str, Any]) -> dict[str, Callable[[], object]]:
    """Every parser of a request message, given ``fields`` next to a valid rest of the message."""
    return {
        "synthesize": lambda: parse_client_message(json.dumps({"text": "Hi.", **fields})),
        "invocations": lambda: parse_invocation(json.dumps({"text": "Hi.", **fields})),
        "openai": lambda: parse_openai_speech(json.dumps({"input": "Hi.", **fields})),
        "agent payload": lambda: parse_payload({"prompt": "Hi.", **fields}),
        "sendMessage": lambda: parse_client_action(json.dumps({"action": "sendMessage", "prompt": "Hi.", **fields})),
        "synthesis_start": lambda: parse_server_message(
            json.dumps({"type": "synthesis_start", "request_id": "r", "sample_rate": 24000, "channels": 1, **fields})
        ),
    }


@pytest.mark.parametrize(("fields", "error", "message"), BAD_FIELDS)
def test_every_route_refuses_a_bad_option_with_the_identical_error(
    fields: dict[str, Any], error: type[ProtocolError], message: str
) -> None:
    refusals = {name: _refusal(parse) for name, parse in _routes(json.loads(json.dumps(fields))).items()}
    assert refusals == dict.fromkeys(refusals, (error, message))


def test_every_request_message_carries_the_options_it_was_given() -> None:
    options = SpeechOptions("jf_alpha", 1.5)
    assert parse_client_message(json.dumps(Synthesize("Hi.", options).to_json())) == Synthesize("Hi.", options)
    invocation = InvocationRequest("Hi.", options)
    assert parse_invocation(json.dumps(invocation.to_json())) == invocation
    assert parse_payload(AgentPayload("Hi.", options=options).to_json()).options == options
    assert parse_client_action(json.dumps(SendMessage("Hi.", options).to_json())) == SendMessage("Hi.", options)
    start = SynthesisStart("r", options)
    assert parse_server_message(json.dumps(start.to_json())) == start
    assert SendMessage("Hi.", options).to_agent_payload().options == options
    fields = {"voice": "jm_kumo", "speed": 0.5, "lang": "EN_GB"}
    for parse in _routes(fields).values():
        parsed: Any = parse()
        assert parsed.options == SpeechOptions("jm_kumo", 0.5, "en-gb")
        assert parsed.options.language is BY_CODE["en-gb"]
