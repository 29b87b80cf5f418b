"""The turn record's transition table (relay_core.relay.turn_record): the DynamoDB conditions generated from it, the
states each write is allowed from, and the copy of the table in docs/functions.md. No AWS: strings in, strings out."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from relay_core.relay.turn_record import (
    TRANSITIONS,
    RecordWrite,
    TurnState,
    allowed,
    condition,
    state_values,
    table_markdown,
)

DOCS = Path(__file__).resolve().parents[3] / "docs" / "functions.md"


def test_every_write_has_one_row() -> None:
    assert set(TRANSITIONS) == set(RecordWrite)


@pytest.mark.parametrize(
    ("write", "expected"),
    [
        (RecordWrite.CREATE, "attribute_not_exists(pk)"),
        (RecordWrite.REQUEST_CANCEL, "attribute_exists(pk) AND #state = :running AND user_id = :u"),
        (
            RecordWrite.RESUME,
            "attribute_exists(pk) AND #state <> :closed AND user_id = :u"
            " AND (attribute_not_exists(detached_at) OR detached_at >= :cutoff)",
        ),
        (RecordWrite.CLOSE, "attribute_exists(pk) AND resume_count = :seen"),
    ],
)
def test_conditions_are_generated_from_the_table(write: RecordWrite, expected: str) -> None:
    assert condition(write) == expected


@pytest.mark.parametrize("write", list(RecordWrite))
def test_every_state_placeholder_a_condition_uses_has_its_value(write: RecordWrite) -> None:
    used = set(re.findall(r":[a-z]+", condition(write)))
    states = {f":{s.value}" for s in TurnState}
    assert used & states <= set(state_values(write))


def test_the_rules_the_client_protocol_promises() -> None:
    # §2: a cancel flags only a running turn; once ended it goes to the agent directly (late barge-in)
    assert allowed(RecordWrite.REQUEST_CANCEL, TurnState.RUNNING)
    assert not allowed(RecordWrite.REQUEST_CANCEL, TurnState.ENDED)
    # §6: a turn can be resumed until its relay exits (also after its end, for a detached client), never after
    assert allowed(RecordWrite.RESUME, TurnState.ENDED)
    assert not allowed(RecordWrite.RESUME, TurnState.CLOSED)
    # a turn id is used once; a closed turn never runs again
    assert allowed(RecordWrite.CREATE, None) and not allowed(RecordWrite.CREATE, TurnState.CLOSED)
    assert not allowed(RecordWrite.CLAIM_RELAY, TurnState.CLOSED)
    assert not allowed(RecordWrite.END, TurnState.CLOSED)


def test_docs_functions_md_carries_the_table() -> None:
    text = DOCS.read_text(encoding="utf-8")
    documented = text.split("<!-- turn-record:begin -->\n", 1)[1].split("\n<!-- turn-record:end -->", 1)[0]
    assert documented == table_markdown()
