"""The recorded cases the web client's Node tests run (tests/web/fixtures/*.json), generated from relay_core.

The browser client mirrors relay_core's SSE decoder and client session in JavaScript. Both sides are checked
against one truth: these cases are built with relay_core itself (``TurnFramer`` numbers and cuts real agent
events, ``encode_sse`` writes SSE bodies, ``SseDecoder`` decodes them) and this test fails whenever the committed
JSON no longer equals what relay_core produces today. Regenerate with::

    .venv/bin/python tests/web/test_web_fixtures.py --write
"""

from __future__ import annotations

import itertools
import json
import math
import re
import struct
import sys
from pathlib import Path
from typing import Any

from relay_core import limits
from relay_core.agent.events import (
    AgentEnd,
    AgentEvent,
    AgentFailed,
    AgentStart,
    AudioChunk,
    AudioStreamEnd,
    AudioStreamStart,
    SpeechWaiting,
    TextDelta,
    serialize_event,
)
from relay_core.agent.turn import AgentTurn
from relay_core.audio import b64decode, b64encode
from relay_core.client.framing import TurnFramer
from relay_core.client.messages import ClientErrorCode, ConversationStarted, Rejection, Resume, TurnAccepted, serialize
from relay_core.client.session import STALL_RESUME_S, ClientSession
from relay_core.close_codes import MESSAGE_TOO_BIG
from relay_core.sse import SseDecoder, encode_sse
from relay_core.word_timings import MAX_PLAYED_MS, MAX_WORD_INDEX, WordTiming, WordTimings
from voice_agent.opus_stream import OpusStream

FIXTURES = Path(__file__).parent / "fixtures"
SESSION_CASES = FIXTURES / "client_session_cases.json"
SSE_CASES = FIXTURES / "sse_cases.json"
CONSTANTS = FIXTURES / "constants.json"

TURN_ID = "t-fixture0000000000000001"
OTHER_TURN_ID = "t-fixture0000000000000002"
FRAME_BUDGET = 1024
"""A small frame budget so that audio is cut into many messages (the real budget is 31 KiB)."""

Json = dict[str, Any]


def tone(n_samples: int, *, freq_hz: float, start: int = 0) -> bytes:
    """``n_samples`` of a sine at ``freq_hz`` (s16le, 24 kHz), with negative samples (sign handling matters)."""
    values = (round(12000 * math.sin(2 * math.pi * freq_hz * (start + i) / 24000)) for i in range(n_samples))
    return b"".join(struct.pack("<h", v) for v in values)


def agent_turn(
    *, cancelled_after: int | None = None, fail_after: int | None = None, timings: bool = False
) -> list[AgentEvent]:
    """A turn's agent events: text with multi-byte characters, audio chunks of uneven sizes (one larger than
    a frame), the terminal event. ``cancelled_after``/``fail_after`` end the turn after that many chunks;
    ``timings``: word timings before the audio they time (enough words for several messages of a small frame)."""
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
            events.append(AgentFailed(request_id=rid, code="tts_failed", message="speech failed: send again"))
            return events
        pcm = tone(size, freq_hz=220 + 40 * index, start=offset)
        if timings:
            events.append(_timings_before_chunk(rid, index))
        offset += size
        events.append(AudioChunk(request_id=rid, seq=index, data=b64encode(pcm)))
        if index == 1:
            events.append(TextDelta(request_id=rid, seq=1, text="Ünïcødé — 日本語, and emoji 🎙️ too. "))
        if index == 3:
            events.append(TextDelta(request_id=rid, seq=2, text="A" * 1500))
    if timings:
        events.append(_timings_before_chunk(rid, len(sizes), last=True))
    events.append(AudioStreamEnd(request_id=rid, total_chunks=len(sizes), duration_s=offset / 24000))
    events.append(AgentEnd(request_id=rid, status="completed", text_chars=42, sentences=3, elapsed_s=1.5))
    return events


def opus_turn() -> list[AgentEvent]:
    """An Opus turn's agent events, made by the agent's own path (``AgentTurn`` with the turn's real
    ``OpusStream``): pieces of uneven sizes, the encoder flushed at the end, so chunks tile ``total_samples``."""
    turn = AgentTurn(TURN_ID, audio_chunk_bytes=4096, model="speak", clock=lambda: 0.0, encoder=OpusStream())
    events: list[AgentEvent] = [turn.start(), *turn.text("Opus, please. ")]
    offset = 0
    for index, size in enumerate([7000, 333, 12001, 50]):
        events += turn.audio(tone(size, freq_hz=200 + 30 * index, start=offset), "af_heart")
        offset += size
    turn.sentence_sent()
    return [*events, *turn.finish()]


ESTIMATED_WORDS = 8
"""Words at the end of each chunk's timings that are estimates, made final by the next message (as the container's
streaming decoder does: docs/protocol.md, *Word timings*)."""


def _timings_before_chunk(rid: str, index: int, *, last: bool = False) -> WordTimings:
    """The word timings sent before audio chunk ``index``: the previous chunk's estimates again, final (with
    ``index``), then 40 new words whose last :data:`ESTIMATED_WORDS` are estimates (none after the last chunk)."""

    def word(group: int, k: int, *, final: bool) -> WordTiming:
        t = (group * 40 + k) * 0.01
        return WordTiming(f"wörd{group}.{k}", round(t, 2), round(t + (0.008 if final else 0.006), 3), final=final)

    replayed = [word(index - 1, k, final=True) for k in range(40 - ESTIMATED_WORDS, 40)] if index else []
    fresh = [] if last else [word(index, k, final=k < 40 - ESTIMATED_WORDS) for k in range(40)]
    first = index * 40 - ESTIMATED_WORDS if index else None
    return WordTimings(rid, (*replayed, *fresh), index=first)


def framed(events: list[AgentEvent], turn_id: str = TURN_ID) -> list[str]:
    framer = TurnFramer(turn_id, budget_bytes=FRAME_BUDGET)
    return [message for event in events for message in framer.frame(event)]


def truth(events: list[AgentEvent]) -> Json:
    """What a client must hold after applying the whole turn: the agent's own text and PCM, joined."""
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    pcm = b"".join(b64decode(e.data) for e in events if isinstance(e, AudioChunk))
    return {"text": text, "pcm_b64": b64encode(pcm)}


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def run_python_session(steps: list[Json]) -> Json:
    """Run relay_core's ClientSession over a case's steps: what it holds and the events it gave (as the JS
    session names them: the Python class name in snake_case)."""
    session = ClientSession(collect_audio=True)
    session.send_message("hi", turn_id=TURN_ID)
    event_types: list[str] = []
    resumes: list[str] = []
    for step in steps:
        if "receive" in step:
            event_types += [_snake(type(e).__name__) for e in session.receive(step["receive"])]
        else:
            resumes.append(session.resume(TURN_ID))
    turn = session.turn(TURN_ID)
    opus = {"packets_b64": [b64encode(p) for p in turn.packets], "samples": turn.samples} if turn.packets else {}
    return {
        "text": turn.text,
        "pcm_b64": b64encode(turn.pcm),
        **opus,
        "outcome": None if turn.outcome is None else turn.outcome.value,
        "error_code": turn.error_code,
        "last_seq": turn.last_seq,
        "words": [word.to_json() for word in turn.words],
        "event_types": event_types,
        "resumes": resumes,
    }


def case(name: str, steps: list[Json], *, resumes: list[str], agent_events: list[AgentEvent] | None = None) -> Json:
    """A recorded case: the steps, and what relay_core's session holds after them. The Python session's
    result is checked here against the independent truth (the agent events' text and PCM; the resume
    messages built directly), then recorded for the JS session."""
    expect = run_python_session([{"receive": s["receive"]} if "receive" in s else {"resume": None} for s in steps])
    assert expect["resumes"] == resumes, name
    if agent_events is not None:
        wanted = truth(agent_events)
        held = b64encode(b"".join(map(b64decode, expect.get("packets_b64", [])))) or expect["pcm_b64"]
        assert (expect["text"], held) == (wanted["text"], wanted["pcm_b64"]), name
    steps = [s if "receive" in s else {"resume": r} for s, r in zip(steps, _fill(steps, resumes), strict=True)]
    del expect["resumes"]
    return {"name": name, "turn_id": TURN_ID, "steps": steps, "expect": expect}


def _fill(steps: list[Json], resumes: list[str]) -> list[str | None]:
    it = iter(resumes)
    return [None if "receive" in s else next(it) for s in steps]


def rx(messages: list[str]) -> list[Json]:
    return [{"receive": m} for m in messages]


RESUME: Json = {"resume": None}
"""A step where the client calls ``resume`` (after a reconnect or a gap); the case records what it sends."""


def session_cases() -> list[Json]:
    accepted = serialize(TurnAccepted(TURN_ID))
    full = agent_turn()
    messages = framed(full)
    k = len(messages) // 2
    cancelled = agent_turn(cancelled_after=2)
    failed = agent_turn(fail_after=3)
    timed = framed(agent_turn(timings=True))
    waited = [full[0], SpeechWaiting(request_id=TURN_ID, position=3), *full[1:]]
    rate_limited = Rejection(ClientErrorCode.RATE_LIMITED.value, "too many turns: wait a minute", TURN_ID)
    expired = Rejection(ClientErrorCode.RESUME_EXPIRED.value, "the turn's messages expired: send again", TURN_ID)
    opus_events = opus_turn()
    opus = framed(opus_events)
    busy = Rejection(ClientErrorCode.TURN_IN_PROGRESS.value, "one turn at a time", TURN_ID)
    return [
        case(
            "complete turn, audio cut on sample boundaries across many messages",
            rx([accepted, *messages]),
            resumes=[],
            agent_events=full,
        ),
        case(
            "dropped connection mid-turn, resume, replay overlapping what was held: applied once",
            [*rx([accepted, *messages[: k + 1]]), RESUME, *rx(messages[k - 3 :])],
            resumes=[serialize(Resume(TURN_ID, k))],
            agent_events=full,
        ),
        case(
            "a lost message is a gap: nothing after it applies until the resume replays it",
            [*rx([accepted, *messages[:k], *messages[k + 1 : k + 4]]), RESUME, *rx(messages[k:])],
            resumes=[serialize(Resume(TURN_ID, k - 1))],
            agent_events=full,
        ),
        case(
            "dropped connection before any turn message: resume from the start",
            [*rx([accepted]), RESUME, *rx(messages)],
            resumes=[serialize(Resume(TURN_ID, -1))],
            agent_events=full,
        ),
        case(
            "messages of another turn do not touch this one",
            rx([accepted, *framed(agent_turn(), OTHER_TURN_ID)[:5], *messages]),
            resumes=[],
            agent_events=full,
        ),
        case(
            "a rejection of a later message leaves the running turn alone",
            rx([accepted, *messages[:4], serialize(busy), *messages[4:]]),
            resumes=[],
            agent_events=full,
        ),
        case(
            "word timings (split across messages) come out in order, once, through a resume",
            [*rx([accepted, *timed[: len(timed) // 2]]), RESUME, *rx(timed[len(timed) // 2 - 4 :])],
            resumes=[serialize(Resume(TURN_ID, len(timed) // 2 - 1))],
            agent_events=agent_turn(timings=True),
        ),
        case(
            "a newConversation's answer (conversation_started) mid-turn leaves the running turn alone",
            rx([accepted, *messages[:3], serialize(ConversationStarted()), *messages[3:]]),
            resumes=[],
            agent_events=full,
        ),
        case(
            "cancelled turn ends with agent_end status cancelled",
            rx([accepted, *framed(cancelled)]),
            resumes=[],
            agent_events=cancelled,
        ),
        case(
            "a turn error carries seq and ends the turn",
            rx([accepted, *framed(failed)]),
            resumes=[],
            agent_events=failed,
        ),
        case(
            "the speech waits in line for the busy speech service (speech_waiting), then the turn completes",
            rx([accepted, *framed(waited)]),
            resumes=[],
            agent_events=waited,
        ),
        case(
            "an Opus turn (audio: opus): whole packets across many messages, tiling the timeline, through a resume",
            [*rx([accepted, *opus[: len(opus) // 2]]), RESUME, *rx(opus[len(opus) // 2 - 3 :])],
            resumes=[serialize(Resume(TURN_ID, len(opus) // 2 - 1))],
            agent_events=opus_events,
        ),
        case(
            "a rejected sendMessage (error without seq) ends the turn before it starts",
            rx([serialize(rate_limited)]),
            resumes=[],
        ),
        case(
            "resume_expired after a resume ends the turn as expired",
            [*rx([accepted, *messages[:k]]), RESUME, *rx([serialize(expired)])],
            resumes=[serialize(Resume(TURN_ID, k - 1))],
        ),
    ]


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
    full = agent_turn()
    turn = sse_body(full)
    waited = sse_body([full[0], SpeechWaiting(request_id=TURN_ID, position=3), *full[1:]])
    multibyte = "é日🎙".encode()
    after_line_breaks = [i + 1 for i in range(200) if turn[i] == 0x0A]
    cases: list[tuple[str, bytes, list[int]]] = [
        ("an agent turn in one chunk", turn, []),
        ("an agent turn cut every 7 bytes", turn, list(range(7, len(turn), 7))),
        ("an agent turn whose speech waits in line (speech_waiting)", waited, list(range(5, len(waited), 333))),
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


def constants() -> Json:
    """The relay_core values the web client mirrors as constants (clients/js/src/session.js, connection.js)."""
    return {
        "STALL_RESUME_MS": round(STALL_RESUME_S * 1000),
        "MAX_PLAYED_MS": MAX_PLAYED_MS,
        "MAX_WORD_INDEX": MAX_WORD_INDEX,
        "MAX_PROMPT_CHARS": limits.MAX_PROMPT_CHARS,
        "MAX_SEND_BYTES": limits.APIGW_FRAME_BYTES,
        "MESSAGE_TOO_BIG": MESSAGE_TOO_BIG,
    }


def render(cases: list[Json] | Json) -> str:
    return json.dumps(cases, ensure_ascii=False, indent=1) + "\n"


def test_session_cases_are_what_relay_core_produces() -> None:
    assert SESSION_CASES.read_text(encoding="utf-8") == render(session_cases()), (
        "tests/web/fixtures/client_session_cases.json is stale: run tests/web/test_web_fixtures.py --write"
    )


def test_sse_cases_are_what_relay_core_decodes() -> None:
    assert SSE_CASES.read_text(encoding="utf-8") == render(sse_cases()), (
        "tests/web/fixtures/sse_cases.json is stale: run tests/web/test_web_fixtures.py --write"
    )


def test_constants_are_relay_cores() -> None:
    assert CONSTANTS.read_text(encoding="utf-8") == render(constants()), (
        "tests/web/fixtures/constants.json is stale: run tests/web/test_web_fixtures.py --write"
    )


def test_fixture_word_timings_span_several_messages() -> None:
    timed = next(c for c in session_cases() if c["name"].startswith("word timings"))
    messages = [json.loads(s["receive"]) for s in timed["steps"] if "receive" in s]
    assert len({m["seq"] for m in messages if m["type"] == "word_timings"}) > 5
    assert len(timed["expect"]["words"]) == 5 * 40
    assert all(word.get("final", True) for word in timed["expect"]["words"]), "every estimate was replaced"
    assert any(m.get("index") is not None for m in messages if m["type"] == "word_timings")


def test_fixture_audio_spans_many_messages() -> None:
    """The cases exercise reassembly: audio chunks are cut into several messages each."""
    messages = [json.loads(s["receive"]) for s in session_cases()[0]["steps"]]
    audio = [m for m in messages if m.get("type") == "audio_chunk"]
    assert len(audio) > len({m["chunk"] for m in audio}) >= 4


def test_fixture_opus_case_cuts_between_packets_and_tiles_the_timeline() -> None:
    opus = next(c for c in session_cases() if c["name"].startswith("an Opus turn"))
    received = [json.loads(s["receive"]) for s in opus["steps"] if "receive" in s]
    messages = {m["seq"]: m for m in received if "seq" in m}
    audio = [m for _, m in sorted(messages.items()) if m.get("type") == "audio_chunk"]
    assert len(audio) > len({m["chunk"] for m in audio})  # the small frame cut agent chunks between packets
    (end,) = [m for m in messages.values() if m["type"] == "audio_stream_end"]
    assert [m["sample_offset"] for m in audio] == list(itertools.accumulate([0] + [m["samples"] for m in audio]))[:-1]
    assert sum(m["samples"] for m in audio) == end["total_samples"] == opus["expect"]["samples"]
    assert sum(len(m["packet_bytes"]) for m in audio) == len(opus["expect"]["packets_b64"])


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: tests/web/test_web_fixtures.py --write")
    FIXTURES.mkdir(exist_ok=True)
    SESSION_CASES.write_text(render(session_cases()), encoding="utf-8")
    SSE_CASES.write_text(render(sse_cases()), encoding="utf-8")
    CONSTANTS.write_text(render(constants()), encoding="utf-8")
    print(f"wrote {SESSION_CASES}, {SSE_CASES} and {CONSTANTS}")
