"""SSE framing survives any re-chunking of the byte stream."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

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
