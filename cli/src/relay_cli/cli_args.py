"""Argument types and checks of the ``relay`` command line: every value is checked while the command line is
parsed, before anything starts, so a mistake costs one line and exit status 2, never a stack started for nothing.

Each function here is an argparse ``type=``: it returns the parsed value or raises ``ArgumentTypeError`` with a
message that says what a valid value looks like (argparse prefixes the option's name). Limits come from
``relay_core.limits``, the turn's rules from ``relay_core.agent.events`` and the speech options' from
``relay_core.speech_options``; none is spelled here again. The
types other commands use too (``non_empty``, ``given_path``) are ``relay_core.cli_usage``'s.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from relay_core import limits
from relay_core.agent.events import parse_payload
from relay_core.cli_usage import lang_code
from relay_core.errors import ProtocolError
from relay_core.languages import LANG_CODES
from relay_core.speech_options import SpeechOptions, read_speech_options
from relay_core.voice_spec import parse_voice_spec

MAX_PORT = 65_535


def port_number(text: str) -> int:
    """A TCP port, 0 (any free port) to 65535."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port: give 0 (any free port) to {MAX_PORT}")
    return port


def positive_int(text: str) -> int:
    """A whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value


def positive_rate(text: str) -> float:
    """A finite number above 0 (the speak model's tokens per second)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number (tokens per second, e.g. 40)")
    return value


def speech_speed(text: str) -> float:
    """A speech speed within the protocol's limits (``relay_core.limits.MIN_SPEED`` to ``MAX_SPEED``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number: give a speed from {limits.MIN_SPEED} to {limits.MAX_SPEED}"
        ) from None
    try:
        return read_speech_options({"speed": value}).speed
    except ProtocolError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def add_speech_options(parser: argparse.ArgumentParser) -> None:
    """``--voice``, ``--lang`` and ``--speed``: how a command that starts a turn wants it spoken
    (:func:`speech_options_of` reads them back)."""
    parser.add_argument("--voice", type=voice_spec, help="voice name or blend (default: the container's)")
    parser.add_argument(
        "--lang", type=lang_code, help=f"language to read the reply in ({LANG_CODES}; default: the voice's)"
    )
    parser.add_argument(
        "--speed",
        type=speech_speed,
        default=limits.DEFAULT_SPEED,
        help=f"speech speed {limits.MIN_SPEED}-{limits.MAX_SPEED}",
    )


def speech_options_of(args: argparse.Namespace) -> SpeechOptions:
    """The :class:`SpeechOptions` that :func:`add_speech_options`' flags give."""
    return SpeechOptions(args.voice, args.speed, args.lang)


def voice_spec(text: str) -> str:
    """A voice name or blend, spelled as ``relay_core.voice_spec`` says and within
    ``relay_core.limits.MAX_VOICE_SPEC_CHARS`` (whether the voice exists only the TTS container knows: it refuses an
    unknown one before any text streams)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the voice is empty: name one (or a blend), or leave --voice out")
    try:
        read_speech_options({"voice": text})
        parse_voice_spec(text)
    except ProtocolError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None
    return text


def wav_path(text: str) -> Path:
    """A file to write: not empty and not an existing directory (its folders are made when it is written)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the file name is empty: give a path such as out/speech.wav")
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a directory: give a file name such as {path / 'speech.wav'}")
    return path


def _url(text: str, schemes: tuple[str, ...], example: str) -> str:
    scheme, sep, rest = text.partition("://")
    if not sep or f"{scheme}://" not in schemes or not rest.split("/", 1)[0]:
        raise argparse.ArgumentTypeError(
            f"{text!r} must start with {' or '.join(schemes)} and name a host (e.g. {example})"
        )
    return text


def http_url(text: str) -> str:
    """An ``http://`` or ``https://`` URL with a host."""
    return _url(text, ("http://", "https://"), "http://127.0.0.1:8082")


def gateway_url(text: str) -> str:
    """A ``ws://`` or ``wss://`` URL with a host (the WebSocket API and its stage)."""
    return _url(text, ("ws://", "wss://"), "wss://{api}.execute-api.{region}.amazonaws.com/{stage}")


def tts_session_url(text: str) -> str:
    """A TTS container's session URL (``ws(s)://host:port/invocations-bidirectional-stream``)."""
    from voice_agent.config import check_tts_url  # noqa: PLC0415 - the agent's own rule, imported when used
    from voice_agent.errors import ConfigError  # noqa: PLC0415

    try:
        check_tts_url(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None
    return text


def agentcore_session_id(text: str) -> str:
    """An AgentCore session id: ``relay_core.limits.AGENTCORE_SESSION_ID_MIN_CHARS`` to ``..._MAX_CHARS`` long."""
    low, high = limits.AGENTCORE_SESSION_ID_MIN_CHARS, limits.AGENTCORE_SESSION_ID_MAX_CHARS
    if not low <= len(text) <= high:
        raise argparse.ArgumentTypeError(f"an AgentCore session id has {low} to {high} characters; got {len(text)}")
    return text


def check_prompts(prompts: list[str]) -> str | None:
    """Why the first invalid prompt cannot be a turn (empty, over ``relay_core.limits.MAX_PROMPT_CHARS``), or
    None when every prompt can. The agent applies the same rule (``relay_core.agent.events.parse_payload``)."""
    for index, prompt in enumerate(prompts):
        try:
            parse_payload({"prompt": prompt})
        except ProtocolError as exc:
            which = "the prompt" if len(prompts) == 1 else f"prompt {index + 1}"
            return f"{which} cannot be sent: {exc.message}"
    return None


__all__ = [
    "MAX_PORT",
    "add_speech_options",
    "agentcore_session_id",
    "check_prompts",
    "gateway_url",
    "http_url",
    "port_number",
    "positive_int",
    "positive_rate",
    "speech_options_of",
    "speech_speed",
    "tts_session_url",
    "voice_spec",
    "wav_path",
]
