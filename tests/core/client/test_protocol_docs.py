"""docs/client-protocol.md and its AsyncAPI description agree with relay_core: every action, message, field,
error code and limit a client developer reads there is the one the code uses, and every example parses."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]  # pyyaml ships no stubs; moto brings it

from relay_core import limits
from relay_core.client.messages import (
    Cancel,
    ClientAction,
    ClientErrorCode,
    GatewayMessageType,
    NewConversation,
    SendMessage,
    parse_client_message,
    serialize,
)
from relay_core.client.turn_messages import (
    CLIENT_FIELDS,
    ENVELOPE_FIELDS,
    TURN_MESSAGE_TYPES,
    parse_server_message,
    serialize_server_message,
)
from relay_core.speech_options import SPEECH_OPTION_FIELDS

DOCS = Path(__file__).resolve().parents[3] / "docs"
PAGE = (DOCS / "client-protocol.md").read_text(encoding="utf-8")
SPEC: dict[str, Any] = yaml.safe_load((DOCS / "client-protocol.asyncapi.yaml").read_text(encoding="utf-8"))
SCHEMAS: dict[str, Any] = SPEC["components"]["schemas"]
MESSAGES: dict[str, Any] = SPEC["components"]["messages"]

TURN_SCHEMAS = {
    "AgentStart": "agent_start",
    "TextDelta": "text_delta",
    "AudioStreamStart": "audio_stream_start",
    "AudioChunk": "audio_chunk",
    "AudioStreamEnd": "audio_stream_end",
    "AgentEnd": "agent_end",
    "TurnError": "error",
    "WordTimings": "word_timings",
    "SpeechWaiting": "speech_waiting",
}


def test_every_error_code_is_in_the_table_and_the_spec() -> None:
    table_codes = set(re.findall(r"^\| `([a-z_]+)` \|", PAGE.split("## 7. Error codes")[1], re.MULTILINE))
    assert {code.value for code in ClientErrorCode} <= table_codes
    assert SCHEMAS["ClientErrorCode"]["enum"] == [code.value for code in ClientErrorCode]


def test_every_action_and_message_type_is_documented() -> None:
    for action in ClientAction:
        assert f"`{action.value}`" in PAGE
    for kind in TURN_MESSAGE_TYPES:
        assert f"`{kind}`" in PAGE
    for kind in GatewayMessageType:
        assert f"`{kind.value}`" in PAGE
    names = {message["name"] for message in MESSAGES.values()}
    assert names == {a.value for a in ClientAction} | set(TURN_MESSAGE_TYPES) | {t.value for t in GatewayMessageType}


@pytest.mark.parametrize(
    ("schema", "cls"), [("SendMessage", SendMessage), ("Cancel", Cancel), ("NewConversation", NewConversation)]
)
def test_client_action_schemas_list_exactly_the_dataclass_fields(schema: str, cls: type[Any]) -> None:
    wire_fields = {f.name for f in dataclasses.fields(cls)} - {"options"}
    if "options" in {f.name for f in dataclasses.fields(cls)}:  # the speech options travel as flat fields
        wire_fields |= set(SPEECH_OPTION_FIELDS)
    assert set(SCHEMAS[schema]["properties"]) == wire_fields | {"action"}


def test_every_turn_message_type_has_a_schema() -> None:
    assert set(TURN_SCHEMAS.values()) == TURN_MESSAGE_TYPES == set(CLIENT_FIELDS)


@pytest.mark.parametrize(("schema", "kind"), TURN_SCHEMAS.items())
def test_turn_message_schemas_list_exactly_the_client_fields(schema: str, kind: str) -> None:
    assert set(SCHEMAS[schema]["properties"]) == {*ENVELOPE_FIELDS, *CLIENT_FIELDS[kind]}


def test_every_spec_example_parses_and_serializes_back() -> None:
    for message in MESSAGES.values():
        for example in message["examples"]:
            payload = example["payload"]
            if "action" in payload:
                assert json.loads(serialize(parse_client_message(payload))) == payload
            else:
                assert json.loads(serialize_server_message(parse_server_message(payload))) == payload


def json_examples(page: str) -> list[dict[str, Any]]:
    """Every object in the page's ```json blocks (a block holds one object, or one object per line)."""
    objects: list[dict[str, Any]] = []
    for block in re.findall(r"```json\n(.*?)```", page, re.DOTALL):
        try:
            objects.append(json.loads(block))
        except json.JSONDecodeError:
            objects.extend(json.loads(line) for line in block.splitlines() if line.strip())
    return objects


def test_every_json_example_on_the_page_parses() -> None:
    examples = json_examples(PAGE)
    assert len(examples) >= 12
    for obj in examples:
        if "action" in obj:
            parse_client_message(obj)
        else:
            parse_server_message(obj)


def test_the_limits_on_the_page_are_the_code_limits() -> None:
    for figure in (
        f"{limits.CLIENT_FRAME_BUDGET_BYTES:,} bytes",
        f"{limits.MAX_PROMPT_CHARS:,} characters",
        f"**{limits.RESUME_WINDOW_S} seconds**",
        f"1–{limits.MAX_TURN_ID_CHARS} characters",
        f"{limits.RESUME_BUFFER_MAX_MESSAGES:,} messages",
        f"{limits.RESUME_BUFFER_MAX_BYTES // 2**20} MiB",
        f"{limits.MIN_SPEED}–{limits.MAX_SPEED}",
        f"{limits.SAMPLE_RATE:,} Hz",
    ):
        assert figure in PAGE, figure
    assert SCHEMAS["SendMessage"]["properties"]["prompt"]["maxLength"] == limits.MAX_PROMPT_CHARS
    assert SCHEMAS["TurnId"]["pattern"] == f"^[A-Za-z0-9_.:-]{{1,{limits.MAX_TURN_ID_CHARS}}}$"
