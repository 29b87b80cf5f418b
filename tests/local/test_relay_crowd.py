"""A crowd through the whole local relay (what ``relay up`` runs) against a TTS container of few sessions, over
each TTS transport (issue 31 §1): twelve users send a turn at once, the container serves four sessions and queues
the rest first come first served; every turn completes with audio, some say ``speech_waiting`` on the way, none
ends ``tts_at_capacity`` or ``tts_failed``. Over SageMaker's bidirectional stream (the local front end) this is
where a close code used to reach the agent as a stream error and fail the turn.

Cheap on two cores: the echo model speaks each user's prompt, a few words. It writes them slowly
(:data:`WORDS_PER_S`), so each turn holds its speech slot for a second or more whatever the machine's speed (a
slower machine only holds it longer) and the twelve turns, sent together, overlap: the queue is not left to luck."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from relay_cli.gateway_client import TurnReport, run_turn
from relay_core.client.session import AudioReceived, ClientEvent, SpeechWaitingReceived, TurnOutcome

pytestmark = pytest.mark.slow

USERS = 12
SESSIONS = 4
"""The container's ``max_sessions``: most of the crowd waits in its queue."""
WORDS_PER_S = 4.0
"""The echo model's pace: about a second per prompt, the time each turn holds its speech slot."""
PROMPTS = [f"Hi, user {n}." for n in range(USERS)]
HANG_S = 240.0
"""A deadline that only catches a hang (twelve turns queued four at a time, on a machine running other tests)."""

CROWD_STACKS = [
    pytest.param(
        {"tts_transport": transport, "tts": {"max_sessions": SESSIONS}, "agent": {"speak_tokens_per_s": WORDS_PER_S}},
        id=transport,
    )
    for transport in ("ws", "sagemaker")
]


@dataclass
class Seen:
    """What one user's client saw besides the report: the ``speech_waiting`` statuses, and whether any of them came
    after the turn's first audio (it must not: the status says the voice has not started yet)."""

    waiting: list[int] = field(default_factory=list)
    audio_before_waiting: bool = False
    audio: bool = False

    def on_event(self, event: ClientEvent) -> None:
        if isinstance(event, SpeechWaitingReceived):
            self.waiting.append(event.position)
            self.audio_before_waiting |= self.audio
        elif isinstance(event, AudioReceived):
            self.audio = True


async def _crowd(stack: Any) -> list[tuple[TurnReport, Seen]]:
    seen = [Seen() for _ in range(USERS)]
    reports = await asyncio.gather(
        *(
            run_turn(stack.gateway_url, stack.dev_token(f"crowd-{n:02d}"), prompt, on_event=seen[n].on_event)
            for n, prompt in enumerate(PROMPTS)
        )
    )
    return list(zip(reports, seen, strict=True))


@pytest.mark.parametrize("relay_stack", CROWD_STACKS, indirect=True)
def test_a_crowd_waits_in_line_and_every_turn_speaks(relay_stack: Any) -> None:
    results = asyncio.run(asyncio.wait_for(_crowd(relay_stack), HANG_S))
    ends = [(report.outcome, report.code) for report, _ in results]
    assert ends == [(TurnOutcome.COMPLETED, None)] * USERS, ends  # none tts_at_capacity, none tts_failed
    for (report, seen), prompt in zip(results, PROMPTS, strict=True):
        assert report.text == prompt
        assert len(report.pcm) > 24_000  # more than half a second of speech
        assert report.seqs == list(range(len(report.seqs)))
        assert not seen.audio_before_waiting
    waited = [seen.waiting for _, seen in results if seen.waiting]
    assert waited, "no turn waited: the container's queue was not exercised"
    assert all(position >= 1 for positions in waited for position in positions)
