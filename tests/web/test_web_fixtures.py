"""The recorded cases the web client's Node tests run (tests/web/fixtures/*.json), generated from relay_core.

The browser client mirrors relay_core's SSE decoder and client session in JavaScript. Both sides are checked
against one truth: these cases are built with relay_core itself (``TurnFramer`` numbers and cuts real agent
events, ``encode_sse`` writes SSE bodies, ``SseDecoder`` decodes them) and this test fails whenever the committed
JSON no longer equals what relay_core produces today. Regenerate with::

    .venv/bin/python tests/web/test_web_fixtures.py --write
"""

from __future__ import annotations

import json
import math
import struct
import sys
from pathlib import Path
from typing import Any

from relay_core.agent_events import (
    AgentEnd,
    AgentError,
    AgentEvent,
    AgentStart,
    AudioChunk,
    AudioStreamEnd,
    AudioStreamStart,
    TextDelta,
    serialize_event,
)
from relay_core.audio import b64decode, b64encode
from relay_core.client_framing import TurnFramer
from relay_core.client_messages import ClientErrorCode, GatewayError, Resume, TurnAccepted, serialize
from relay_core.sse import SseDecoder, encode_sse

FIXTURES = Path(__file__).parent / "fixtures"
SESSION_CASES = FIXTURES / "client_session_cases.json"
SSE_CASES = FIXTURES / "sse_cases.json"

TURN_ID = "t-fixture0000000000000001"
OTHER_TURN_ID = "t-fixture0000000000000002"
FRAME_BUDGET = 1024
"""A small frame budget so that audio is cut into many messages (the real budget is 31 KiB)."""

Json = dict[str, Any]


def tone(n_samples: int, *, freq_hz: float, start: int = 0) -> bytes:
    """``n_samples`` of a sine at ``freq_hz`` (s16le, 24 kHz), with negative samples (sign handling matters)."""
    values = (round(12000 * math.sin(2 * math.pi * freq_hz * (start + i) / 24000)) for i in range(n_samples))
    return b"".join(struct.pack("<h", v) for v in values)


def agent_turn(*, cancelled_after: int | None = None, fail_after: int | None = None) -> list[AgentEvent]:
    """A turn's agent events: text with multi-byte characters, audio chunks of uneven sizes (one larger than
    a frame), the terminal event. ``cancelled_after``/``fail_after`` end the turn after that many chunks."""
    rid = TURN_ID
    sizes = [700, 2, 2400, 333, 1501]
    events: list[AgentEvent] = [
        AgentStart(request_id=rid, mode="bidi", model="speak"),
        TextDelta(request_id=rid, seq=0, text="Hello there. "),
        AudioStreamStart(request_id=rid, voice="jf_alpha"),
    ]
    offset = 0
    for index, size in enumerate(sizes):
        if cancelled_after == index:
            events.append(AgentEnd(request_id=rid, status="cancelled"))
            return events
        if fail_after == index:
            events.append(AgentError(request_id=rid, code="tts_failed", message="speech failed: send again"))
            return events
        pcm = tone(size, freq_hz=220 + 40 * index, start=offset)
        offset += size
        events.append(AudioChunk(request_id=rid, seq=index, data=b64encode(pcm)))
        if index == 1:
            events.append(TextDelta(request_id=rid, seq=1, text="Ünïcødé — 日本語, and emoji 🎙️ too. "))
        if index == 3:
            events.append(TextDelta(request_id=rid, seq=2, text="A" * 1500))
    events.append(AudioStreamEnd(request_id=rid, total_chunks=len(sizes), duration_s=offset / 24000))
    events.append(AgentEnd(request_id=rid, status="completed", text_chars=42, sentences=3, elapsed_s=1.5))
    return events


def framed(events: list[AgentEvent], turn_id: str = TURN_ID) -> list[str]:
    framer = TurnFramer(turn_id, budget_bytes=FRAME_BUDGET)
    return [message for event in events for message in framer.frame(event)]


def expected_from(events: list[AgentEvent], *, status: str | None, last_seq: int, **extra: Any) -> Json:
    """What a client holds after applying the turn: the agent's text and PCM, joined (the truth the framing
    must preserve)."""
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    pcm = b"".join(b64decode(e.data) for e in events if isinstance(e, AudioChunk))
    return {"text": text, "pcm_b64": b64encode(pcm), "status": status, "last_seq": last_seq, **extra}


def session_cases() -> list[Json]:
    accepted = serialize(TurnAccepted(TURN_ID))
    full = agent_turn()
    messages = framed(full)
    last = len(messages) - 1
    k = len(messages) // 2
    cases: list[Json] = [
        {
            "name": "complete turn, audio cut on sample boundaries across many messages",
            "inputs": [accepted, *messages],
            "expect": expected_from(full, status="completed", last_seq=last, gaps=0, duplicates=0, resume=None),
        },
        {
            "name": "replayed messages after a resume are applied once",
            "inputs": [accepted, *messages[: k + 1], *messages[k - 3 :]],
            "expect": expected_from(full, status="completed", last_seq=last, gaps=0, duplicates=4, resume=None),
        },
        {
            "name": "a lost message is a gap: nothing after it applies until the resume replays it",
            "inputs": [accepted, *messages[:k], *messages[k + 1 : k + 4], *messages[k:]],
            "expect": expected_from(full, status="completed", last_seq=last, gaps=1, duplicates=0, resume=None),
            "gap_resume": serialize(Resume(TURN_ID, k - 1)),
        },
        {
            "name": "dropped connection mid-turn: resume from the last seq held",
            "inputs": [accepted, *messages[: k + 1]],
            "expect": {"status": None, "last_seq": k, "resume": serialize(Resume(TURN_ID, k))},
        },
        {
            "name": "dropped connection before any turn message: resume from the start",
            "inputs": [accepted],
            "expect": {"status": None, "last_seq": -1, "resume": serialize(Resume(TURN_ID, -1))},
        },
        {
            "name": "messages of another turn are ignored",
            "inputs": [accepted, *framed(agent_turn(), OTHER_TURN_ID)[:5], *messages],
            "expect": expected_from(full, status="completed", last_seq=last, gaps=0, duplicates=0, resume=None),
        },
    ]
    cancelled = agent_turn(cancelled_after=2)
    cancelled_messages = framed(cancelled)
    cases.append(
        {
            "name": "cancelled turn ends with agent_end status cancelled",
            "inputs": [accepted, *cancelled_messages],
            "expect": expected_from(cancelled, status="cancelled", last_seq=len(cancelled_messages) - 1, resume=None),
        }
    )
    failed = agent_turn(fail_after=3)
    failed_messages = framed(failed)
    cases.append(
        {
            "name": "a turn error carries seq and ends the turn",
            "inputs": [accepted, *failed_messages],
            "expect": expected_from(
                failed, status="error", error_code="tts_failed", last_seq=len(failed_messages) - 1, resume=None
            ),
        }
    )
    rate_limited = GatewayError(ClientErrorCode.RATE_LIMITED.value, "too many turns: wait a minute", TURN_ID)
    cases.append(
        {
            "name": "a rejected sendMessage (error without seq) ends the turn before it starts",
            "inputs": [serialize(rate_limited)],
            "expect": {
                "text": "",
                "pcm_b64": "",
                "status": "error",
                "error_code": "rate_limited",
                "last_seq": -1,
                "resume": None,
            },
        }
    )
    expired = GatewayError(ClientErrorCode.RESUME_EXPIRED.value, "the turn's messages expired: send again", TURN_ID)
    partial = messages[:k]
    cases.append(
        {
            "name": "resume_expired ends the turn",
            "inputs": [accepted, *partial, serialize(expired)],
            "expect": {"status": "error", "error_code": "resume_expired", "last_seq": k - 1, "resume": None},
        }
    )
    return cases


def sse_body(events: list[AgentEvent]) -> bytes:
    return b"".join(encode_sse(serialize_event(e)) for e in events)


def decode_chunks(body: bytes, cuts: list[int]) -> list[Json]:
    decoder = SseDecoder()
    points = [*sorted(set(cuts)), len(body)]
    out: list[Json] = []
    start = 0
    for point in points:
        out += [{"data": e.data, "event": e.event} for e in decoder.feed(body[start:point])]
        start = point
    out += [{"data": e.data, "event": e.event} for e in decoder.close()]
    return out


def sse_cases() -> list[Json]:
    turn = sse_body(agent_turn())
    multibyte = "é日🎙".encode()
    after_line_breaks = [i + 1 for i in range(200) if turn[i] == 0x0A]
    cases: list[tuple[str, bytes, list[int]]] = [
        ("an agent turn in one chunk", turn, []),
        ("an agent turn cut every 7 bytes", turn, list(range(7, len(turn), 7))),
        ("CRLF line breaks, cut between CR and LF", turn.replace(b"\n", b"\r\n"), [turn.find(b"\n") + 1]),
        ("CR-only line breaks, cut after every CR", turn.replace(b"\n", b"\r"), after_line_breaks),
        ("a multi-byte character cut in the middle", b"data: " + multibyte + b"\n\n", [7, 8, 10, 12]),
        ("comments, event names, multi-line data", b": ping\n\nevent: audio\ndata: a\ndata: b\n\ndata:c\n\n", [3, 17]),
        ("an unterminated tail counts at the end", b"data: one\n\ndata: tail", [4]),
        ("field without colon and empty data", b"data\n\ndata:\n\nretry: 5\nid: 1\ndata: x\n\n", []),
    ]
    return [
        {"name": name, "body_b64": b64encode(body), "cuts": cuts, "events": decode_chunks(body, cuts)}
        for name, body, cuts in cases
    ]


def render(cases: list[Json]) -> str:
    return json.dumps(cases, ensure_ascii=False, indent=1) + "\n"


def test_session_cases_are_what_relay_core_produces() -> None:
    assert SESSION_CASES.read_text(encoding="utf-8") == render(session_cases()), (
        "tests/web/fixtures/client_session_cases.json is stale: run tests/web/test_web_fixtures.py --write"
    )


def test_sse_cases_are_what_relay_core_decodes() -> None:
    assert SSE_CASES.read_text(encoding="utf-8") == render(sse_cases()), (
        "tests/web/fixtures/sse_cases.json is stale: run tests/web/test_web_fixtures.py --write"
    )


def test_fixture_audio_spans_many_messages() -> None:
    """The cases exercise reassembly: audio chunks are cut into several messages each."""
    messages = [json.loads(m) for m in session_cases()[0]["inputs"]]
    audio = [m for m in messages if m.get("type") == "audio_chunk"]
    assert len(audio) > len({m["chunk"] for m in audio}) >= 4


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: tests/web/test_web_fixtures.py --write")
    FIXTURES.mkdir(exist_ok=True)
    SESSION_CASES.write_text(render(session_cases()), encoding="utf-8")
    SSE_CASES.write_text(render(sse_cases()), encoding="utf-8")
    print(f"wrote {SESSION_CASES} and {SSE_CASES}")
