"""A turn with ``audio: "opus"`` through the real agent app and the real TTS container (real int8 Kokoro model):
one Opus stream whose packets decode to the PCM turn's audio (same text, same length, the same sound)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.agent.test_agent_e2e import _run, make_agent  # noqa: F401  (make_agent: the fixture)
from tests.agent.test_opus_stream import correlation

from relay_cli.opus_decode import decode_opus_turn
from relay_core.agent.events import AgentEnd, AgentPayload, AudioChunk, AudioStreamEnd, AudioStreamStart, TextDelta
from relay_core.audio import b64decode
from relay_core.audio_piece import AudioChoice

pytestmark = pytest.mark.slow

PROMPT = "Opus, please. Thanks!"


def test_an_opus_turn_decodes_to_the_pcm_turns_audio(make_agent: Any) -> None:  # noqa: F811
    agent = make_agent()
    pcm_events, _ = _run(agent.url, AgentPayload(prompt=PROMPT, request_id="turn-pcm"))
    opus_events, _ = _run(agent.url, AgentPayload(prompt=PROMPT, request_id="turn-opus", audio=AudioChoice.OPUS))
    for events in (pcm_events, opus_events):
        assert isinstance(events[-1], AgentEnd) and events[-1].status == "completed"
    text = ["".join(e.text for e in events if isinstance(e, TextDelta)) for events in (pcm_events, opus_events)]
    assert text[0] == text[1] == PROMPT
    pcm = b"".join(b64decode(e.data) for e in pcm_events if isinstance(e, AudioChunk))
    (start,) = [e for e in opus_events if isinstance(e, AudioStreamStart)]
    assert (start.format, start.frame_samples) == ("opus", 480) and start.pre_skip is not None
    chunks = [e for e in opus_events if isinstance(e, AudioChunk)]
    assert all(c.packet_bytes is not None for c in chunks)
    total = sum(c.samples or 0 for c in chunks)
    (end,) = [e for e in opus_events if isinstance(e, AudioStreamEnd)]
    assert total * 2 == len(pcm) and end.total_chunks == len(chunks)
    decoded = decode_opus_turn([p for c in chunks for p in c.packets()], pre_skip=start.pre_skip, total_samples=total)
    assert len(decoded) == len(pcm)
    assert sum(len(b64decode(c.data)) for c in chunks) * 8 < len(pcm)  # far smaller than the PCM
    assert correlation(decoded, pcm) > 0.8
