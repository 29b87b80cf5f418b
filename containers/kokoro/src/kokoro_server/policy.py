"""The speech policy every request follows: silence shaping and the first fragment (docs/server.md).

One frozen :class:`SpeechPolicy` is built from the server's settings and handed to the scheduler, so every route
(WebSocket, ``/invocations`` with WAV, PCM, SSE or a compressed format, the OpenAI route, and through the
WebSocket the agent's stream) speaks by the same rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kokoro_server.silence import SilencePolicy

DEFAULT_FIRST_FRAGMENT_WORDS = 4
"""The container's first-fragment policy by default: the first segment of a session that has heard nothing yet
ends at the first clause mark or phrase boundary after this many words (relay_core.text.segmenter)."""


SECONDS_PER_TOKEN = 0.056
"""Audio per phoneme token at speed 1 once the silence policy has trimmed the model's padding (Kokoro-82M, median
over 24 corpus segments: 0.056 s, 0.050 to 0.118): a segment's length estimated from its plan."""


@dataclass(frozen=True, slots=True)
class SpeechPolicy:
    """How audio is shaped (:class:`SilencePolicy`) and where a request's first segment is cut."""

    silence: SilencePolicy = field(default_factory=SilencePolicy)
    first_fragment_words: int | None = DEFAULT_FIRST_FRAGMENT_WORDS
    """Server default for the first segment of a session that has heard nothing yet, when that segment is decoded
    whole (streaming off, or an engine that cannot stream); None turns it off. A request may ask for a cut in any
    case (``first_fragment_words`` on ``synthesize`` and ``/invocations``; 0 = off)."""
    stream_decoder: bool = True
    """Decode a segment a listener is waiting on chunk by chunk and send each chunk's audio as it exists (an engine
    that can: the split int8 ONNX model, the torch engine), instead of the whole segment at once; which segments
    those are: :meth:`streams_segment`."""
    stream_every_segment: bool = False
    """With :attr:`stream_decoder`: stream every segment, not only those a listener is waiting on (each segment's
    audio then starts after one small chunk, at about 1.24x the decoder's work with the two-window chunk schedule,
    1.78x with issue 21's: docs/benchmarks.md §12, §13)."""
    stream_ahead_ratio: float = 0.5
    """After a session's first sound, a later segment of the same request still streams while the request's audio
    already sent is shorter than this fraction of the segment's estimated audio. The listener's buffer after a
    streamed first segment is about half the audio sent (the rest of that segment decodes while it plays), so
    0.5 keeps a whole decode ahead of the listener up to a decoder pace of about 0.25 s per second of audio (2
    quiet cores: 0.15). 0: only the first sound streams."""

    def __post_init__(self) -> None:
        if not self.stream_ahead_ratio >= 0:
            raise ValueError(f"stream_ahead_ratio={self.stream_ahead_ratio}: use 0 or more")
        if self.first_fragment_words is not None and self.first_fragment_words < 1:
            raise ValueError(
                f"first_fragment_words={self.first_fragment_words}: use at least 1, or None to turn it off"
            )

    def streams_segment(self, *, session_heard: bool, sent_s: float, tokens: int, speed: float) -> bool:
        """Whether a segment of ``tokens`` phoneme tokens spoken at ``speed`` is decoded chunk by chunk, given
        whether its session had heard anything when the request began (``session_heard``) and how many seconds of
        this request's audio have been sent before the segment (``sent_s``).

        A listener waits on a segment when nothing of the session has been heard (its first chunk is the first
        sound), or when, after that first sound, the request's audio sent so far is shorter than
        :attr:`stream_ahead_ratio` of the segment's own: a whole decode might outlast it. Every other segment is
        decoded whole: the same work and the same audio, bit for bit, as with streaming off. A request of a session
        that has heard something has the session's earlier audio ahead of it and is decoded whole. The choice
        reads only the request's plan and the audio it has produced, never the time or the load, so a session
        gets the same PCM alone and under load (docs/server.md, *Which segments stream*)."""
        if not self.stream_decoder:
            return False
        if self.stream_every_segment:
            return True
        if session_heard:
            return False
        if sent_s <= 0:
            return True
        return sent_s < self.stream_ahead_ratio * tokens * SECONDS_PER_TOKEN / speed

    def fragment_words(self, requested: int | None, *, heard: bool, streams: bool = False) -> int | None:
        """The first-fragment words for one request: the request's own choice (0 = off) if it made one, else the
        server default while the session has heard nothing yet (later requests of a session are already
        queued behind audio that is playing, so cutting them gains nothing) and its first segment would be decoded
        whole. ``streams``: the engine streams its decoder under this policy (:attr:`stream_decoder`); the first
        sound then comes after one chunk whatever the segment's length, so the cut buys no time and the default
        leaves the first sentence whole (docs/server.md, *The first-fragment cut with streaming*)."""
        if requested is not None:
            return requested or None
        if heard or (streams and self.stream_decoder):
            return None
        return self.first_fragment_words


RAW = SpeechPolicy(silence=SilencePolicy(enabled=False), first_fragment_words=None, stream_decoder=False)
"""The model's output as it was before these policies: no trimming, no pauses, no first-fragment cut, whole
segments."""
