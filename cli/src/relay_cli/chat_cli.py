"""``relay chat``: talk to the relay's WebSocket API from a terminal, as a mobile client does (client protocol §4).

``relay chat --gateway-url wss://… --token …`` talks to a deployed (or ``relay up``) gateway; ``relay chat
--local`` starts the whole local stack (TTS, agent, moto, gateway, real functions) for the duration of the
command. Prompts come from the arguments, or one per line from stdin. For each turn it prints the reply's text as
it streams, the time to first audio and the message statistics, and writes the speech to a WAV file.
``--drop-after N`` aborts the connection after N messages and resumes on a new one (nothing lost or repeated).
``--timings`` asks for the reply's word timings and prints each word with the time it is spoken, instead of the
raw text stream. A prompt whose message is over the protocol's limits (32 KB of UTF-8 in one gateway frame) is
refused before connecting (exit status 2); a turn whose message the gateway closes the connection over (1009)
ends with one line saying so (exit status 1), never sent again. ``--new-conversation`` starts over first
(``newConversation``): the agent answers the prompts with no memory of the user's earlier turns. ``--audio opus``
asks for the speech as Opus packets (decoded with PyAV into the same WAV); the summary says which format came.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import warnings
from pathlib import Path

from websockets.exceptions import InvalidStatus, InvalidURI

from relay_cli.agent_options import add_agent_options, agent_config_from, model_notice
from relay_cli.cli_args import (
    add_speech_options,
    check_prompts,
    gateway_url,
    positive_int,
    speech_options_of,
    wav_path,
)
from relay_cli.gateway_client import (
    GatewayTurnError,
    NewConversationError,
    TurnReport,
    run_turn,
    start_new_conversation,
)
from relay_core.agent.events import TurnMode
from relay_core.audio import wav_bytes
from relay_core.audio_piece import AudioChoice, AudioPiece
from relay_core.cli_usage import non_empty
from relay_core.client.session import (
    ClientEvent,
    ClientSession,
    SpeechWaitingReceived,
    TextReceived,
    TurnOutcome,
    WordsReceived,
)
from relay_core.errors import LimitExceededError
from relay_core.word_timings import WordTiming, WordTimings, apply_word_timings
from voice_agent.errors import ConfigError

NAME = "chat"
DEFAULT_USER = "cli-user"


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``relay chat`` and its options."""
    parser = commands.add_parser("chat", help="talk to the relay's WebSocket API like a mobile client")
    parser.add_argument("prompts", nargs="*", help="what to say (one turn each); none: one prompt per stdin line")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument(
        "--gateway-url",
        type=gateway_url,
        help="the WebSocket API (wss://{api}.execute-api.{region}.amazonaws.com/{stage})",
    )
    target.add_argument("--local", action="store_true", help="start the whole local stack for this command")
    parser.add_argument(
        "--token", type=non_empty, help="an ID token for --gateway-url (with --local, a dev token is minted)"
    )
    parser.add_argument("--user", type=non_empty, default=DEFAULT_USER, help="--local: the dev token's user id")
    parser.add_argument("--out", type=wav_path, default=Path("out/chat.wav"), help="WAV file (turn N>1: name-N.wav)")
    parser.add_argument("--mode", choices=[m.value for m in TurnMode], default=TurnMode.BIDI.value)
    add_speech_options(parser)
    parser.add_argument(
        "--drop-after", type=positive_int, metavar="N", help="drop the connection after N messages, resume"
    )
    parser.add_argument(
        "--timings", action="store_true", help="ask for word timings; print each word with when it is spoken"
    )
    parser.add_argument(
        "--audio",
        choices=[choice.value for choice in AudioChoice],
        default=AudioChoice.PCM.value,
        help="what the speech travels as: pcm (default) or opus (decoded into the WAV)",
    )
    parser.add_argument(
        "--new-conversation",
        action="store_true",
        help="start over before the first prompt: the agent forgets the user's earlier turns",
    )
    parser.add_argument("--quiet", action="store_true", help="print only the summaries")
    add_agent_options(parser)
    parser.set_defaults(run=chat)


def _out_path(base: Path, index: int) -> Path:
    return base if index == 0 else base.with_name(f"{base.stem}-{index + 1}{base.suffix}")


def caption_line(word: WordTiming) -> str:
    """One word as ``relay chat --timings`` prints it: its span on the turn's audio timeline, then the word."""
    return f"{word.start_s:8.2f} – {word.end_s:6.2f} s  {word.word}"


class FinalWords:
    """The words ``relay chat --timings`` prints for one turn: each once, in order, once its timing is final
    (estimates are held until the message that replaces them: ``relay_core.word_timings.apply_word_timings``)."""

    def __init__(self) -> None:
        self._held: list[WordTiming] = []
        self._printed = 0

    def take(self, event: WordsReceived) -> list[WordTiming]:
        """The words that became printable with ``event``."""
        apply_word_timings(self._held, WordTimings(event.turn_id, event.words, index=event.index))
        ready = list(itertools.takewhile(lambda word: word.final, self._held[self._printed :]))
        self._printed += len(ready)
        return ready


def _too_large(args: argparse.Namespace, prompts: list[str]) -> str | None:
    """Why the first prompt whose ``sendMessage`` is over the protocol's limits (one 32 KB gateway frame, which
    API Gateway would close the connection over) cannot be sent, or None: refused before connecting."""
    for index, prompt in enumerate(prompts):
        try:
            ClientSession().send_message(
                prompt,
                options=speech_options_of(args),
                mode=TurnMode(args.mode),
                timings=args.timings,
                audio=AudioChoice(args.audio),
            )
        except LimitExceededError as exc:
            which = "the prompt" if len(prompts) == 1 else f"prompt {index + 1}"
            return f"{which} cannot be sent: {exc.message}"
    return None


def _prompts(args: argparse.Namespace) -> list[str]:
    if args.prompts:
        return list(args.prompts)
    return [line.strip() for line in sys.stdin if line.strip()]


async def _talk(args: argparse.Namespace, gateway_url: str, token: str, prompts: list[str]) -> int:
    failures = 0
    captions = FinalWords()

    def show(event: ClientEvent) -> None:
        if args.quiet:
            return
        if isinstance(event, WordsReceived):
            sys.stdout.write("".join(caption_line(word) + "\n" for word in captions.take(event)))
        elif isinstance(event, TextReceived) and not args.timings:
            sys.stdout.write(event.text)
        elif isinstance(event, SpeechWaitingReceived):  # the speech service is busy: the voice waits in line
            print("[voice starting…]", file=sys.stderr)
            return
        else:
            return
        sys.stdout.flush()

    if args.new_conversation:
        try:
            await start_new_conversation(gateway_url, token)
        except NewConversationError as exc:
            print(f"relay chat: {exc}", file=sys.stderr)
            return 1
        except InvalidStatus as exc:
            return _refused(exc)
        except (OSError, InvalidURI) as exc:
            return _unreachable(gateway_url, exc)
        if not args.quiet:
            print("[a new conversation: the agent does not remember earlier turns]", file=sys.stderr)
    for index, prompt in enumerate(prompts):
        captions = FinalWords()
        try:
            report = await run_turn(
                gateway_url,
                token,
                prompt,
                mode=TurnMode(args.mode),
                options=speech_options_of(args),
                on_event=show,
                drop_after=args.drop_after,
                timings=args.timings,
                audio=AudioChoice(args.audio),
            )
        except GatewayTurnError as exc:
            print(f"\nrelay chat: {exc}", file=sys.stderr)
            failures += 1
            continue
        except InvalidStatus as exc:
            return _refused(exc)
        except (OSError, InvalidURI) as exc:
            return _unreachable(gateway_url, exc)
        failures += _summarize(report, _out_path(args.out, index))
    return 1 if failures else 0


def _refused(exc: InvalidStatus) -> int:
    """Say why the gateway refused the handshake; the exit status."""
    status = exc.response.status_code
    print(
        f"relay chat: the gateway refused the connection (HTTP {status}): "
        + ("the token is missing, expired or not for this gateway" if status in (401, 403) else "try again"),
        file=sys.stderr,
    )
    return 1


def _unreachable(gateway_url: str, exc: Exception) -> int:
    """Say that the gateway cannot be reached; the exit status."""
    print(f"relay chat: cannot reach the gateway at {gateway_url}: {exc}", file=sys.stderr)
    return 1


def _summarize(report: TurnReport, out: Path) -> int:
    """Print the turn's figures; write its WAV only when the turn completed (a failed turn writes nothing)."""
    print()
    completed = report.outcome is TurnOutcome.COMPLETED
    if completed:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(wav_bytes(report.pcm))
    ttfa = "n/a" if report.time_to_first_audio_s is None else f"{report.time_to_first_audio_s * 1000:.0f} ms"
    print(
        f"turn {report.turn_id}: {report.outcome}; connected in {report.connect_s * 1000:.0f} ms; "
        f"time to first audio after sendMessage: {ttfa}; audio "
        f"{AudioPiece.pcm(report.pcm).duration_s:.2f} s ({report.audio_format or 'none'}) in "
        f"{report.elapsed_s:.2f} s; {report.messages} messages "
        f"(largest {report.largest_message_bytes} bytes, {report.duplicates} duplicates, "
        f"{report.reconnects} reconnects); " + (f"wrote {out}" if completed else "no WAV written")
    )
    if not completed:
        print(f"relay chat: the turn ended {report.outcome}: {report.code} {report.message or ''}", file=sys.stderr)
        return 1
    return 0


def chat(args: argparse.Namespace) -> int:
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    prompts = _prompts(args)
    if not prompts:
        print("relay chat: give a prompt as an argument or on stdin", file=sys.stderr)
        return 2
    problem = check_prompts(prompts) or _too_large(args, prompts)
    if problem is not None:
        print(f"relay chat: {problem}", file=sys.stderr)
        return 2
    if not args.local:
        if not args.token:
            print("relay chat: --gateway-url needs --token (an ID token of the user pool)", file=sys.stderr)
            return 2
        return asyncio.run(_talk(args, args.gateway_url, args.token, prompts))
    try:
        config = agent_config_from(args)
    except ConfigError as exc:
        print(f"relay chat: {exc.message}", file=sys.stderr)
        return 2
    if (notice := model_notice(config)) is not None:
        print(notice, file=sys.stderr)

    from relay_local.relay_stack import RelayStack  # noqa: PLC0415 - the servers' imports only once they are needed

    def progress(line: str) -> None:
        print(f"[{line}]", file=sys.stderr)

    with RelayStack(
        tts_url=args.tts_url,
        agent_url=args.agent_url,
        agent_config=config,
        progress=progress,
        tts_transport=args.tts_transport,
    ) as stack:
        code = asyncio.run(_talk(args, stack.gateway_url, stack.dev_token(args.user), prompts))
        progress("stopping the local stack")
    return code


__all__ = ["add_parser", "caption_line", "chat"]
