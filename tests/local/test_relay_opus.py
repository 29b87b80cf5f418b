"""Opus to clients through the whole local relay (REAL gateway functions, local API Gateway, real agent app and
real Kokoro model): a turn sent with ``audio: "opus"`` arrives as whole packets that decode to the turn's audio,
and a drop + resume mid-turn replays byte-identical messages and loses nothing."""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from typing import Any

import pytest
from tests.agent.test_opus_stream import correlation

from relay_cli.gateway_client import TurnReport, run_turn
from relay_core import limits
from relay_core.audio_piece import AudioChoice
from relay_core.client.session import TurnOutcome

SHORT = "Hello there. The gateway relays every packet."


def _audio_chunks(report: TurnReport) -> list[dict[str, Any]]:
    """The turn's audio_chunk messages, each seq once, in seq order."""
    by_seq = {m["seq"]: m for m in map(json.loads, report.received) if m.get("type") == "audio_chunk"}
    return [by_seq[seq] for seq in sorted(by_seq)]


@pytest.fixture(scope="module")
def opus_turn(relay_stack: Any) -> TurnReport:
    """A turn of SHORT in Opus, with no drop: what the PCM turn and the resumed turn are compared with, spoken once
    (the echo model speaks SHORT whatever came before in the conversation)."""
    token = relay_stack.dev_token("opus-listener")
    return asyncio.run(run_turn(relay_stack.gateway_url, token, SHORT, audio=AudioChoice.OPUS))


def test_an_opus_turn_through_the_gateway_decodes_to_the_pcm_turns_audio(
    relay_stack: Any, opus_turn: TurnReport
) -> None:
    pcm_turn = asyncio.run(run_turn(relay_stack.gateway_url, relay_stack.dev_token("pcm-listener"), SHORT))
    assert (pcm_turn.audio_format, opus_turn.audio_format) == (limits.PCM_FORMAT, limits.OPUS_FORMAT)
    assert opus_turn.outcome is TurnOutcome.COMPLETED and opus_turn.text == pcm_turn.text == SHORT
    assert opus_turn.largest_message_bytes <= limits.CLIENT_FRAME_BUDGET_BYTES
    chunks = _audio_chunks(opus_turn)
    end = 0
    for chunk in chunks:
        assert chunk["sample_offset"] == end and sum(chunk["packet_bytes"]) > 0
        end += chunk["samples"]
    assert end * 2 == len(pcm_turn.pcm) == len(opus_turn.pcm)  # the same timeline, tiled exactly
    assert correlation(opus_turn.pcm, pcm_turn.pcm) > 0.8
    pcm_bytes = sum(len(m.encode()) for m in pcm_turn.received if '"audio_chunk"' in m)
    opus_bytes = sum(len(m.encode()) for m in opus_turn.received if '"audio_chunk"' in m)
    assert opus_bytes * 5 < pcm_bytes


@pytest.mark.parametrize("drop_after", [6])
def test_an_opus_turn_dropped_mid_turn_resumes_byte_identical_and_complete(
    relay_stack: Any, opus_turn: TurnReport, drop_after: int
) -> None:
    token = relay_stack.dev_token("opus-dropper")
    whole = opus_turn
    resumed = asyncio.run(
        run_turn(relay_stack.gateway_url, token, SHORT, audio=AudioChoice.OPUS, drop_after=drop_after)
    )
    assert resumed.reconnects == 1 and resumed.outcome is TurnOutcome.COMPLETED
    assert resumed.seqs == list(range(len(resumed.seqs)))
    copies: defaultdict[int, set[str]] = defaultdict(set)
    for text in resumed.received:
        message = json.loads(text)
        if "seq" in message:
            copies[message["seq"]].add(text)
    assert all(len(texts) == 1 for texts in copies.values())  # every replayed message byte for byte the same
    assert resumed.text == whole.text
    assert sum(c["samples"] for c in _audio_chunks(resumed)) * 2 == len(resumed.pcm)
    assert resumed.packets == whole.packets and resumed.pcm == whole.pcm  # nothing lost or repeated
