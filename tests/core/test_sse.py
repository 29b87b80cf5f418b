"""SSE framing survives any re-chunking of the byte stream."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relay_core.errors import LimitExceededError
from relay_core.sse import SseDecoder, SseEvent, encode_sse

payloads = st.lists(st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=40), min_size=1, max_size=8)


@settings(max_examples=200, deadline=None)
@given(payloads, st.lists(st.integers(0, 10_000), max_size=12), st.booleans())
def test_any_rechunking_yields_the_same_events(data: list[str], cuts: list[int], crlf: bool) -> None:
    body = b"".join(encode_sse(d) for d in data)
    if crlf:
        body = body.replace(b"\n", b"\r\n")
    points = sorted({c % (len(body) + 1) for c in cuts})
    decoder = SseDecoder()
    events: list[SseEvent] = []
    start = 0
    for point in [*points, len(body)]:
        events += decoder.feed(body[start:point])
        start = point
    events += decoder.close()
    expected = [d.replace("\r\n", "\n").replace("\r", "\n") for d in data]
    assert [e.data for e in events] == expected


def test_comments_event_names_and_unterminated_tail() -> None:
    decoder = SseDecoder()
    events = decoder.feed(b': keep-alive\n\nevent: audio\ndata: {"a":1}\n\ndata: tail')
    assert events == [SseEvent(data='{"a":1}', event="audio")]
    assert decoder.close() == [SseEvent(data="tail")]


def test_an_endless_line_is_refused_not_buffered() -> None:
    decoder = SseDecoder(max_event_bytes=1000)
    decoder.feed(b"data: " + b"x" * 900)
    with pytest.raises(LimitExceededError, match="exceeds 1000 bytes"):
        decoder.feed(b"x" * 200)
    # the decoder was reset: a well-formed event after it is read normally
    assert decoder.feed(b'data: {"ok":1}\n\n') == [SseEvent(data='{"ok":1}')]


def test_an_event_of_many_lines_is_bounded_as_a_whole() -> None:
    decoder = SseDecoder(max_event_bytes=1000)
    for _ in range(62):
        decoder.feed(b"data: " + b"y" * 10 + b"\n")  # no blank line: the event never ends
    with pytest.raises(LimitExceededError):
        decoder.feed(b"data: " + b"y" * 10 + b"\n")
    many = b"".join(b"data: " + bytes([65 + i % 26]) * 100 + b"\n\n" for i in range(50))
    assert len(SseDecoder(max_event_bytes=1000).feed(many)) == 50  # many events, each small: fine
