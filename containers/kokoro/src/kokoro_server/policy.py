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


@dataclass(frozen=True, slots=True)
class SpeechPolicy:
    """How audio is shaped (:class:`SilencePolicy`) and where a request's first segment is cut."""

    silence: SilencePolicy = field(default_factory=SilencePolicy)
    first_fragment_words: int | None = DEFAULT_FIRST_FRAGMENT_WORDS
    """Server default for the first segment of a session that has heard nothing yet; None turns it off. A
    request may override it (``first_fragment_words`` on ``synthesize`` and ``/invocations``; 0 = off)."""
    stream_decoder: bool = False
    """Decode each segment chunk by chunk and send each chunk's audio as it exists (an engine that can: the split
    int8 ONNX model), instead of the whole segment at once. Requests with word timings render whole segments."""

    def __post_init__(self) -> None:
        if self.first_fragment_words is not None and self.first_fragment_words < 1:
            raise ValueError(
                f"first_fragment_words={self.first_fragment_words}: use at least 1, or None to turn it off"
            )

    def fragment_words(self, requested: int | None, *, heard: bool) -> int | None:
        """The first-fragment words for one request: the request's own choice (0 = off) if it made one, else the
        server default while the session has heard nothing yet (later requests of a session are already
        queued behind audio that is playing, so cutting them gains nothing)."""
        if requested is not None:
            return requested or None
        return None if heard else self.first_fragment_words


RAW = SpeechPolicy(silence=SilencePolicy(enabled=False), first_fragment_words=None)
"""The model's output as it was before these policies: no trimming, no pauses, no first-fragment cut."""
