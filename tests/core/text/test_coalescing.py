"""relay_core.text.coalescing: the leading-edge throttle over a turn's text deltas."""

from __future__ import annotations

import itertools
import random

import pytest

from relay_core.agent.events import AgentEnd, AgentEvent, AudioChunk, TextDelta
from relay_core.text.coalescing import TextCoalescer

REQ = "t-1"


def text(seq: int, piece: str) -> TextDelta:
    return TextDelta(REQ, seq, piece)


def texts(events: list[AgentEvent]) -> list[str]:
    return [e.text for e in events if isinstance(e, TextDelta)]


def test_the_first_text_goes_at_once_and_the_next_ones_wait_for_the_window() -> None:
    c = TextCoalescer(0.1)
    assert c.push(text(0, "Hel"), 1.00) == [text(0, "Hel")]
    assert c.push(text(1, "lo"), 1.02) == []
    assert c.push(text(2, ", wor"), 1.05) == []
    assert c.deadline == pytest.approx(1.10)
    assert c.due(1.09) == []
    assert c.due(1.10) == [text(1, "lo, wor")]  # the first held delta's seq, the texts joined in order
    assert c.deadline is None
    assert c.joined == 1


def test_text_after_a_quiet_spell_is_not_delayed() -> None:
    c = TextCoalescer(0.1)
    c.push(text(0, "a"), 0.0)
    assert c.push(text(1, "b"), 0.5) == [text(1, "b")]


def test_any_other_event_goes_at_once_after_the_text_held_before_it() -> None:
    c = TextCoalescer(0.1)
    c.push(text(0, "One. "), 0.0)
    c.push(text(1, "Two"), 0.01)
    chunk = AudioChunk(REQ, 0, "AAAA")
    assert c.push(chunk, 0.02) == [text(1, "Two"), chunk]
    end = AgentEnd(REQ)
    assert c.push(end, 0.03) == [end]  # nothing held: the end alone


def test_flush_hands_over_held_text_whatever_the_window() -> None:
    c = TextCoalescer(10.0)
    c.push(text(0, "x"), 0.0)
    c.push(text(1, "y"), 0.001)
    assert c.flush(0.002) == [text(1, "y")]
    assert c.flush(0.003) == []


def test_a_zero_window_passes_every_delta_through() -> None:
    c = TextCoalescer(0.0)
    assert [c.push(text(i, str(i)), 0.0) for i in range(3)] == [[text(i, str(i))] for i in range(3)]


def test_a_negative_window_is_refused() -> None:
    with pytest.raises(ValueError, match="window_s"):
        TextCoalescer(-0.1)


@pytest.mark.parametrize("seed", range(20))
def test_any_stream_keeps_its_text_and_order_and_at_most_one_text_per_window(seed: int) -> None:
    rng = random.Random(seed)
    window = 0.1
    c = TextCoalescer(window)
    now, out = 0.0, []
    sent: list[tuple[float, bool]] = []  # (when, forced out by a non-text event)
    agent_text, others = "", []
    for seq in range(200):
        now += rng.choice((0.0, 0.005, 0.025, 0.08, 0.3))
        for held in c.due(now):
            out.append(held)
            sent.append((now, False))
        if rng.random() < 0.15:
            event: AgentEvent = AudioChunk(REQ, seq, "AAAA")
            others.append(event)
        else:
            piece = rng.choice(("a", "bc ", "def. ", "é", "👍🏽"))
            agent_text += piece
            event = text(seq, piece)
        for ready in c.push(event, now):
            out.append(ready)
            if isinstance(ready, TextDelta):
                sent.append((now, not isinstance(event, TextDelta)))
    out.extend(c.flush(now))
    assert "".join(texts(out)) == agent_text
    assert [e for e in out if not isinstance(e, TextDelta)] == others
    # text sent on its own schedule (not forced out by another event) comes at least a window after the last text
    for (before, _), (at, forced) in itertools.pairwise(sent):
        assert forced or at - before >= window - 1e-9
    assert len(sent) < 200 - len(others)
