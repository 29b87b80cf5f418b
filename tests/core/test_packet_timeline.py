"""PacketTimeline: an Opus stream's packets placed on the PCM timeline (pre_skip dropped, never past a limit)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from relay_core.errors import AudioFormatError
from relay_core.packet_timeline import PacketTimeline


def test_the_first_packets_lose_pre_skip_and_later_ones_a_whole_frame_each() -> None:
    timeline = PacketTimeline(pre_skip=156, frame_samples=480)
    assert timeline.place(1, limit=10_000) == (0, 324)
    assert timeline.place(2, limit=10_000) == (324, 960)
    assert (timeline.packets, timeline.samples) == (3, 1284)


def test_a_group_never_reaches_past_its_limit_and_the_rest_follows_later() -> None:
    timeline = PacketTimeline(pre_skip=156, frame_samples=480)
    assert timeline.place(3, limit=1000) == (0, 1000)
    assert timeline.place(1, limit=1000) == (1000, 0)
    assert timeline.place(0, limit=1500) == (1000, 500)


def test_a_pre_skip_longer_than_a_frame_gives_empty_first_groups() -> None:
    timeline = PacketTimeline(pre_skip=700, frame_samples=480)
    assert timeline.place(1, limit=5000) == (0, 0)
    assert timeline.place(1, limit=5000) == (0, 260)


def test_a_negative_pre_skip_is_refused() -> None:
    with pytest.raises(AudioFormatError, match="pre_skip"):
        PacketTimeline(pre_skip=-1)


@given(st.lists(st.integers(min_value=0, max_value=9), max_size=30), st.integers(min_value=0, max_value=2000))
def test_groups_tile_the_timeline_up_to_the_total(groups: list[int], spare: int) -> None:
    total = max(0, sum(groups) * 480 - 156 - spare)
    timeline = PacketTimeline(pre_skip=156)
    end = 0
    for n in groups:
        start, samples = timeline.place(n, limit=total)
        assert start == end and samples >= 0
        end = start + samples
    assert end == total
