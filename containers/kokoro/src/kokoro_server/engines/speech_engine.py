"""What the server needs from an engine: :class:`SpeechEngine`, satisfied by :class:`kokoro_server.engines.Engine`.

One complete protocol: every capability the pipeline uses is a member (whether the decoder streams, the timed and
the streamed render, one word's phonemes for word timings), so nothing is looked up with ``getattr``. The server
depends on this protocol rather than on the concrete engine so that tests can wrap a real engine (to make one
render fail, for instance) without touching the main path.
"""

from __future__ import annotations

from typing import Protocol

from kokoro_server.engines.base import Rendered, Segment, StreamedRender
from relay_core.languages import Language


class SpeechEngine(Protocol):
    """A loaded text-to-speech model. Every method may be called from several threads at once."""

    name: str
    sample_rate: int
    default_voice: str

    @property
    def streams(self) -> bool:
        """Whether :meth:`render_stream` decodes chunk by chunk (else it gives the whole segment as one chunk)."""
        ...

    def voices(self) -> list[str]:
        """The voice names, sorted."""
        ...

    def official_voices(self) -> frozenset[str]:
        """The voices that are official Kokoro v1.0 packs, bit for bit (their pinned table digest)."""
        ...

    def check_voice(self, spec: str) -> None:
        """Raise ``UnknownVoiceError`` or ``InvalidRequestError`` if ``spec`` (a name or a blend) cannot be used."""
        ...

    def language_for(self, voice: str, lang: Language | None = None) -> Language | None:
        """The language a request is read in: ``lang``, else its voice's (a blend's first voice's; raises
        ``InvalidRequestError`` for a blend of two languages), else None (the default G2P)."""
        ...

    def plan(self, text: str, *, voice: str, speed: float, lang: Language | None = None) -> list[Segment]:
        """G2P in the request's language (``lang``, else the voice's) and split into segments of at most 510
        tokens (blocking)."""
        ...

    def render_timed(self, segment: Segment, *, voice: str, speed: float) -> Rendered:
        """Synthesize one segment (blocking): float32 mono at :attr:`sample_rate`, with the frames per token when
        the model gives them (``durations`` None otherwise: such a model gives no word timings)."""
        ...

    def render_stream(self, segment: Segment, *, voice: str, speed: float) -> StreamedRender:
        """Run one segment's front end (blocking); its audio comes chunk by chunk as the chunks are read. The
        chunks, concatenated, sound like :meth:`render_timed`'s audio and have its length."""
        ...

    def phonemize_word(self, word: str, language: Language | None = None) -> str:
        """One written word's phonemes in ``language`` (a segment's), filtered to the model's vocabulary (word
        timings align these)."""
        ...


class DelegatingEngine:
    """A :class:`SpeechEngine` that forwards every call to ``inner``: subclass it to observe or change one call
    (instrumentation, fault injection) without restating the protocol. Every render goes through
    :meth:`before_render` first. ``streams`` (default: the inner engine's) says whether segments are decoded chunk
    by chunk; False makes every segment decode whole, as an engine that cannot stream does."""

    def __init__(self, inner: SpeechEngine, *, streams: bool | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.sample_rate = inner.sample_rate
        self.default_voice = inner.default_voice
        self._streams = inner.streams if streams is None else streams and inner.streams

    @property
    def streams(self) -> bool:
        return self._streams

    def voices(self) -> list[str]:
        return self.inner.voices()

    def official_voices(self) -> frozenset[str]:
        return self.inner.official_voices()

    def check_voice(self, spec: str) -> None:
        self.inner.check_voice(spec)

    def language_for(self, voice: str, lang: Language | None = None) -> Language | None:
        return self.inner.language_for(voice, lang)

    def plan(self, text: str, *, voice: str, speed: float, lang: Language | None = None) -> list[Segment]:
        return self.inner.plan(text, voice=voice, speed=speed, lang=lang)

    def phonemize_word(self, word: str, language: Language | None = None) -> str:
        return self.inner.phonemize_word(word, language)

    def before_render(self, segment: Segment) -> None:
        """Called (on the worker thread) before each segment is rendered, whole or streamed; does nothing here."""

    def render_timed(self, segment: Segment, *, voice: str, speed: float) -> Rendered:
        self.before_render(segment)
        return self.inner.render_timed(segment, voice=voice, speed=speed)

    def render_stream(self, segment: Segment, *, voice: str, speed: float) -> StreamedRender:
        self.before_render(segment)
        return self.inner.render_stream(segment, voice=voice, speed=speed)
