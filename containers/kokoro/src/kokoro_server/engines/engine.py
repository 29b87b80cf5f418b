"""The engine: G2P front end + one synthesizer + a voice bank, behind one small API.

The server plans a text into segments (each at most 510 tokens, split at sentence, then clause, then
word boundaries by :mod:`relay_core.text.segmenter`) and renders them one by one, so it can stream audio
segment by segment and stop between segments when a request is cancelled.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from kokoro_server.engines.base import Rendered, Segment, StreamedRender, Synthesizer
from kokoro_server.engines.errors import InvalidRequestError
from kokoro_server.engines.g2p import LanguageG2P, Tokenizer
from kokoro_server.engines.voice_packs import PREFERRED_DEFAULT_VOICES
from kokoro_server.engines.voices import VoiceBank
from relay_core import limits
from relay_core.errors import InvalidFieldError
from relay_core.languages import Language, language_of_voice
from relay_core.text import segmenter
from relay_core.voice_spec import parse_voice_spec


class Engine:
    """Text → speech with one loaded model. Immutable after construction; safe to call from many threads."""

    def __init__(
        self,
        *,
        synthesizer: Synthesizer,
        voice_bank: VoiceBank,
        g2p: LanguageG2P,
        tokenizer: Tokenizer,
        default_voice: str | None = None,
    ) -> None:
        self._synthesizer = synthesizer
        self._voices = voice_bank
        self._g2p = g2p
        self._tokenizer = tokenizer
        self.name: str = synthesizer.name
        self.sample_rate: int = synthesizer.sample_rate
        names = voice_bank.names()
        chosen = default_voice or next((v for v in PREFERRED_DEFAULT_VOICES if v in names), names[0])
        voice_bank.resolve(chosen)
        self.default_voice: str = chosen
        self._official = voice_bank.official_names()

    @property
    def language(self) -> str:
        """The espeak-ng language of the default G2P (voices of no known language, Latin words in Japanese and
        Mandarin text)."""
        return self._g2p.default.language

    def language_for(self, voice: str, lang: Language | None = None) -> Language | None:
        """The language a request is read in: ``lang`` when given, else its voice's, else None (the default G2P).
        A blend is read in its first voice's language; it may mix American and British English but no two
        languages (raises :class:`InvalidRequestError`), unless ``lang`` says which one to read."""
        if lang is not None:
            return lang
        try:
            entries = parse_voice_spec(voice)
        except InvalidFieldError as exc:  # as VoiceBank.resolve refuses it
            raise InvalidRequestError(exc.message) from None
        found = [found for entry in entries if (found := language_of_voice(entry.name)) is not None]
        if len({language.code.split("-")[0] for language in found}) > 1:
            names = " and ".join(sorted({language.name for language in found}))
            raise InvalidRequestError(
                f"voice {voice!r} blends {names} voices: a blend mixes voices of one language; blend voices of "
                "one language, or say which language to read with 'lang'"
            )
        return found[0] if found else None

    def voices(self) -> list[str]:
        """The available voice names, sorted (blends of them are accepted too)."""
        return self._voices.names()

    def official_voices(self) -> frozenset[str]:
        """The voices that are official Kokoro v1.0 packs, bit for bit."""
        return self._official

    def check_voice(self, spec: str) -> None:
        """Raise :class:`UnknownVoiceError` or :class:`InvalidRequestError` if ``spec`` cannot be used."""
        self._voices.resolve(spec)

    def phonemize_word(self, word: str, language: Language | None = None) -> str:
        """The phonemes of one written word alone in ``language``, as the model would hear them (word timings align
        these)."""
        return self._tokenizer.keep(self._g2p(word, language))

    def plan(self, text: str, *, voice: str, speed: float, lang: Language | None = None) -> list[Segment]:
        """Phonemize ``text`` in its language (:meth:`language_for`) and cut it into segments of 1..510 tokens,
        in reading order.

        Voice, speed and language are validated here, so a bad request fails before any synthesis.
        """
        self.check_voice(voice)
        _check_speed(speed)
        language = self.language_for(voice, lang)
        segments: list[Segment] = []
        for sentence in segmenter.split_sentences(text):
            segment = self._segment(sentence, language)
            if len(segment.tokens) <= Tokenizer.MAX_TOKENS:
                segments.append(segment)
                continue
            for piece in segmenter.split_to_fit(sentence, lambda part: self._fits(part, language)):
                segments.append(self._segment(piece, language))
        return [segment for segment in segments if segment.tokens]

    def render(self, segment: Segment, *, voice: str, speed: float) -> npt.NDArray[np.float32]:
        """Synthesize one planned segment (blocking); float32 mono at :attr:`sample_rate`."""
        return self.render_timed(segment, voice=voice, speed=speed).audio

    def render_timed(self, segment: Segment, *, voice: str, speed: float) -> Rendered:
        """Synthesize one planned segment (blocking), with the frames the model gave each of its tokens."""
        _check_speed(speed)
        if len(segment.tokens) > Tokenizer.MAX_TOKENS:
            raise InvalidRequestError(
                f"segment has {len(segment.tokens)} tokens, more than {Tokenizer.MAX_TOKENS}: use Engine.plan"
            )
        if not segment.tokens:
            return Rendered(audio=np.zeros(0, dtype=np.float32), durations=())
        pack = self._voices.resolve(voice)
        style = self._voices.style_for(pack, len(segment.tokens))
        return self._synthesizer.infer_timed(segment.tokens, style, speed)

    @property
    def streams(self) -> bool:
        """Whether :meth:`render_stream` decodes chunk by chunk (the synthesizer was split at its decoder)."""
        return self._synthesizer.streams

    def render_stream(self, segment: Segment, *, voice: str, speed: float) -> StreamedRender:
        """Run one segment's front end (blocking); its audio comes chunk by chunk as the result's chunks are read.

        A synthesizer that cannot stream gives the whole segment as one chunk. Concatenated, the chunks are as
        long as :meth:`render_timed`'s audio and sound the same (docs/server.md: the streaming quality measures).
        """
        _check_speed(speed)
        if len(segment.tokens) > Tokenizer.MAX_TOKENS:
            raise InvalidRequestError(
                f"segment has {len(segment.tokens)} tokens, more than {Tokenizer.MAX_TOKENS}: use Engine.plan"
            )
        if not segment.tokens:
            return StreamedRender(durations=(), chunks=iter(()))
        pack = self._voices.resolve(voice)
        style = self._voices.style_for(pack, len(segment.tokens))
        return self._synthesizer.stream_timed(segment.tokens, style, speed)

    def synthesize(self, text: str, *, voice: str, speed: float) -> npt.NDArray[np.float32]:
        """Plan and render all of ``text``; the segments' audio concatenated (empty for silent text)."""
        parts = [
            self.render(segment, voice=voice, speed=speed) for segment in self.plan(text, voice=voice, speed=speed)
        ]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)

    def _segment(self, text: str, language: Language | None) -> Segment:
        phonemes = self._tokenizer.keep(self._g2p(text, language))
        return Segment(text=text, phonemes=phonemes, tokens=tuple(self._tokenizer(phonemes)), language=language)

    def _fits(self, text: str, language: Language | None) -> bool:
        return len(self._tokenizer(self._g2p(text, language))) <= Tokenizer.MAX_TOKENS


def _check_speed(speed: float) -> None:
    if not (isinstance(speed, int | float) and math.isfinite(speed) and limits.MIN_SPEED <= speed <= limits.MAX_SPEED):
        raise InvalidRequestError(
            f"speed {speed!r} is out of range: use a number from {limits.MIN_SPEED} to {limits.MAX_SPEED}"
        )
