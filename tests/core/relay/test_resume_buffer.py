"""relay_core.relay.resume_buffer: a turn's recent messages, bounded, replayed after a seq."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from relay_core import limits
from relay_core.errors import InvalidFieldError, ResumeExpiredError, SessionStateError
from relay_core.relay.resume_buffer import ResumeBuffer


def filled(count: int, **bounds: int) -> ResumeBuffer:
    buffer = ResumeBuffer(**bounds)
    for seq in range(count):
        buffer.append(seq, f"m{seq}")
    return buffer


def test_after_returns_exactly_the_later_messages_in_order() -> None:
    buffer = filled(5)
    assert buffer.after(-1) == ["m0", "m1", "m2", "m3", "m4"]
    assert buffer.after(2) == ["m3", "m4"]
    assert buffer.after(4) == []
    assert (buffer.first_seq, buffer.last_seq, buffer.next_seq, len(buffer)) == (0, 4, 5, 5)


def test_empty_buffer_replays_nothing_from_the_start() -> None:
    buffer = ResumeBuffer()
    assert buffer.after(-1) == []
    assert buffer.last_seq == -1


def test_message_count_bound_evicts_oldest_and_expires_resumes_into_them() -> None:
    buffer = filled(10, max_messages=4)
    assert len(buffer) == 4
    assert buffer.first_seq == 6
    assert buffer.evicted == 6
    assert buffer.after(5) == ["m6", "m7", "m8", "m9"]
    with pytest.raises(ResumeExpiredError) as info:
        buffer.after(4)
    assert info.value.code == "resume_expired"
    assert "5 to 5" in info.value.message


def test_byte_bound_counts_utf8_and_keeps_the_newest_message_even_if_alone_too_big() -> None:
    buffer = ResumeBuffer(max_bytes=10)
    buffer.append(0, "ééé")  # 6 bytes
    buffer.append(1, "abcd")  # 4 bytes: 10 in all, kept
    assert buffer.size_bytes == 10 and len(buffer) == 2
    buffer.append(2, "x")
    assert buffer.after(0) == ["abcd", "x"]
    buffer.append(3, "y" * 50)
    assert buffer.after(2) == ["y" * 50]
    assert buffer.size_bytes == 50


def test_appends_must_be_contiguous() -> None:
    buffer = filled(2)
    with pytest.raises(SessionStateError, match="expected seq 2"):
        buffer.append(3, "m3")
    with pytest.raises(SessionStateError):
        buffer.append(1, "again")
    buffer.extend([(2, "m2"), (3, "m3")])
    assert buffer.after(1) == ["m2", "m3"]


def test_impossible_after_seq_is_an_invalid_field() -> None:
    buffer = filled(3)
    with pytest.raises(InvalidFieldError, match="beyond"):
        buffer.after(3)
    with pytest.raises(InvalidFieldError):
        buffer.after(-2)


def test_defaults_come_from_limits() -> None:
    buffer = ResumeBuffer()
    assert buffer.max_messages == limits.RESUME_BUFFER_MAX_MESSAGES
    assert buffer.max_bytes == limits.RESUME_BUFFER_MAX_BYTES
    with pytest.raises(ValueError):
        ResumeBuffer(max_messages=0)


@given(
    sizes=st.lists(st.integers(min_value=0, max_value=40), max_size=80),
    max_messages=st.integers(min_value=1, max_value=20),
    max_bytes=st.integers(min_value=1, max_value=300),
    data=st.data(),
)
def test_bounds_hold_and_replays_are_exact_suffixes(
    sizes: list[int], max_messages: int, max_bytes: int, data: st.DataObject
) -> None:
    buffer = ResumeBuffer(max_messages=max_messages, max_bytes=max_bytes)
    messages = [f"{seq}:" + "é" * size for seq, size in enumerate(sizes)]
    for seq, message in enumerate(messages):
        buffer.append(seq, message)
        assert len(buffer) <= max_messages
        assert buffer.size_bytes <= max_bytes or len(buffer) == 1
        assert buffer.size_bytes == sum(len(m.encode()) for m in messages[buffer.first_seq : seq + 1])
    after = data.draw(st.integers(min_value=-1, max_value=len(messages) - 1))
    if after + 1 >= buffer.first_seq:
        assert buffer.after(after) == messages[after + 1 :]
    else:
        with pytest.raises(ResumeExpiredError):
            buffer.after(after)
