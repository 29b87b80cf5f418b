"""How a request wants its text spoken: one type, one parser, one serializer for every route.

Every request message embeds a :class:`SpeechOptions` as its ``options`` field instead of restating the fields:
the TTS session's ``synthesize`` (:mod:`relay_core.tts.messages`), the HTTP bodies of ``/invocations`` and
``/v1/audio/speech`` (:mod:`relay_core.tts.http_events`), the agent payload (:mod:`relay_core.agent.events`) and
the client protocol's ``sendMessage`` (:mod:`relay_core.client.messages`). On the wire the options stay flat
fields of the message (``"voice"``, ``"speed"`` next to ``"text"``); :func:`read_speech_options` reads them from
any message and :meth:`SpeechOptions.to_json_fields` writes them, so every route accepts, refuses and sends them
identically.

Adding an option is: one field on :class:`SpeechOptions`, its check in ``_checked_fields`` (the parser's and the
constructor's one rule), its line in :meth:`SpeechOptions.to_json_fields` (all in this module), plus the code where
it takes effect (the engine). The messages, their parsers, the agent and the gateway carry it without a change:
``lang`` (a language of :mod:`relay_core.languages` overriding the voice's own) was added exactly so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from relay_core import limits
from relay_core.errors import InvalidFieldError
from relay_core.fields import JsonObject, get_number, get_str
from relay_core.languages import BY_CODE, MAX_LANG_CHARS, Language, parse_lang


@dataclass(frozen=True, slots=True)
class SpeechOptions:
    """The speech options of one request. ``voice`` None means the server's default voice (a name, or a blend
    ``"jf_alpha:0.7,jm_kumo:0.3"``); ``speed`` is MIN_SPEED..MAX_SPEED (1.0 = the voice's own pace); ``lang`` None
    reads the text in the voice's language, else in the language it names (any spelling :func:`parse_lang` takes,
    kept as the language's code).

    Construction checks every field with exactly the rules (and messages) of :func:`read_speech_options`, so an
    instance is always valid; ``speed`` is kept as a float."""

    voice: str | None = None
    speed: float = limits.DEFAULT_SPEED
    lang: str | None = None

    def __post_init__(self) -> None:
        self.check()
        object.__setattr__(self, "speed", float(self.speed))
        if self.lang is not None:
            object.__setattr__(self, "lang", parse_lang(self.lang).code)

    @property
    def language(self) -> Language | None:
        """The language ``lang`` names (None: the voice's own)."""
        return BY_CODE[self.lang] if self.lang is not None else None

    def check(self, *, request_id: str | None = None) -> None:
        """Raise the ``ProtocolError`` subclass the parser raises for the same field on the wire (with
        ``request_id`` set); an empty ``voice``, which the wire reads as "the default", is refused here: use None."""
        if self.voice == "":
            raise InvalidFieldError(
                f"'voice' must be 1 to {limits.MAX_VOICE_SPEC_CHARS} characters; leave it out for the default voice",
                request_id=request_id,
            )
        if self.speed is None:  # the wire reads a null speed as absent; a constructed one must be a number
            raise InvalidFieldError("'speed' must be a number, not NoneType", request_id=request_id)
        if self.lang == "":
            raise InvalidFieldError(
                "'lang' must name a language; leave it out for the voice's own", request_id=request_id
            )
        _checked_fields(self.to_json_fields(), request_id=request_id)

    def with_voice(self, voice: str) -> SpeechOptions:
        """A copy naming ``voice`` (the server fills in its default before speaking)."""
        return replace(self, voice=voice)

    def or_defaults(self, *, voice: str | None = None, lang: str | None = None) -> SpeechOptions:
        """A copy whose unset ``voice`` and ``lang`` take these (an agent's configured defaults); set ones stay."""
        return replace(self, voice=self.voice or voice, lang=self.lang or lang)

    def to_json_fields(self) -> JsonObject:
        """The flat fields every message embeds, in wire order: ``voice`` (only when set), ``speed``, then
        ``lang`` (only when set)."""
        obj: JsonObject = {}
        if self.voice is not None:
            obj["voice"] = self.voice
        obj["speed"] = self.speed
        if self.lang is not None:
            obj["lang"] = self.lang
        return obj


SPEECH_OPTION_FIELDS: Final[tuple[str, ...]] = tuple(spec.name for spec in dataclasses.fields(SpeechOptions))
"""The wire names of the options (the same as the dataclass's fields), for code that picks them out of a message."""


def read_speech_options(obj: Mapping[str, Any], *, request_id: str | None = None) -> SpeechOptions:
    """The speech options of a decoded message or request body; absent fields take their defaults and an empty
    ``voice`` means the default voice. Raises only ``ProtocolError`` subclasses, carrying ``request_id``:
    ``InvalidFieldError`` for a wrong type or a speed out of range, ``LimitExceededError`` for a voice over
    ``MAX_VOICE_SPEC_CHARS``."""
    return SpeechOptions(**_checked_fields(obj, request_id=request_id))


def _checked_fields(obj: Mapping[str, Any], *, request_id: str | None) -> dict[str, Any]:
    """Each option's value read from ``obj`` and checked: the one set of rules behind the parser and the
    constructor."""
    voice = get_str(obj, "voice", max_chars=limits.MAX_VOICE_SPEC_CHARS, request_id=request_id)
    speed = get_number(
        obj,
        "speed",
        default=limits.DEFAULT_SPEED,
        minimum=limits.MIN_SPEED,
        maximum=limits.MAX_SPEED,
        request_id=request_id,
    )
    lang = get_str(obj, "lang", max_chars=MAX_LANG_CHARS, request_id=request_id)
    return {
        "voice": voice or None,
        "speed": speed,
        "lang": parse_lang(lang, request_id=request_id).code if lang else None,
    }


DEFAULT_SPEECH: Final = SpeechOptions()
"""The options of a request that names none: the server's default voice at its own pace."""


__all__ = ["DEFAULT_SPEECH", "SPEECH_OPTION_FIELDS", "SpeechOptions", "read_speech_options"]
