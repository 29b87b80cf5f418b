"""``relay speak "prompt"``: one turn through the local agent and TTS container apps, written to a WAV file.

It starts the TTS container app (the real Kokoro model) and the agent app on free loopback ports (or uses
``--tts-url`` / ``--agent-url``), sends the prompt, prints the reply's text as it streams and the time to first
audio, and writes the audio to a WAV file. The default model is ``speak``, the offline echo model: the reply IS
the prompt, streamed back token by token at ``--rate`` tokens/s, so no LLM is needed (say so when you demo it);
``--model smollm2`` a real (tiny) LLM through the local Bedrock stand-in, ``--model bedrock|openai|ollama`` a real one
elsewhere; ``--tts-transport sagemaker`` puts the local SageMaker front end in the path (the same agent options as
``relay chat --local`` and ``relay up``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from relay_cli.agent_options import add_agent_options, agent_config_from
from relay_cli.cli_args import (
    add_speech_options,
    agentcore_session_id,
    check_prompts,
    speech_options_of,
    wav_path,
)
from relay_core.agent.defaults import LOCAL_AGENT_URL
from relay_core.agent.events import AgentEnd, AgentEvent, AgentFailed, AgentPayload, AgentStart, TextDelta, TurnMode
from relay_core.audio import wav_bytes
from relay_core.audio_piece import AudioPiece
from relay_core.errors import RelayError
from voice_agent.errors import ConfigError

if TYPE_CHECKING:
    from relay_cli.agent_client import TurnResult

NAME = "speak"


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``relay speak`` and its options."""
    parser = commands.add_parser("speak", help="run agent + TTS locally, stream a reply, write it to a WAV file")
    parser.add_argument("prompt", help="what to say to the agent")
    parser.add_argument(
        "--out", type=wav_path, default=Path("out/speech.wav"), help="WAV file (default out/speech.wav)"
    )
    parser.add_argument("--mode", choices=[m.value for m in TurnMode], default=TurnMode.BIDI.value)
    add_speech_options(parser)
    add_agent_options(parser)
    parser.add_argument(
        "--session-id",
        type=agentcore_session_id,
        help="AgentCore session id (a conversation); default: a one-off turn",
    )
    parser.add_argument("--quiet", action="store_true", help="print only the summary")
    parser.set_defaults(run=speak)


class SpeakError(Exception):
    """A failure ``relay speak`` reports as one line (no traceback); the message says what to do."""


async def _speak(args: argparse.Namespace, agent_url: str) -> TurnResult:
    import httpx  # noqa: PLC0415 - the HTTP client only when a turn runs

    from relay_cli.agent_client import collect_turn  # noqa: PLC0415

    payload = AgentPayload(args.prompt, TurnMode(args.mode), speech_options_of(args))

    def show(event: AgentEvent) -> None:
        if isinstance(event, AgentStart) and event.model:
            print(f"[model: {event.model}]", file=sys.stderr)
        if isinstance(event, TextDelta) and not args.quiet:
            sys.stdout.write(event.text)
            sys.stdout.flush()

    try:
        async with httpx.AsyncClient() as client:
            return await collect_turn(client, agent_url, payload, session_id=args.session_id, on_event=show)
    except httpx.HTTPStatusError as exc:
        raise SpeakError(
            f"the agent at {agent_url} answered HTTP {exc.response.status_code} for /invocations: "
            "check --agent-url (it is the agent's base URL, e.g. " + LOCAL_AGENT_URL + ")"
        ) from exc
    except httpx.HTTPError as exc:
        raise SpeakError(
            f"cannot reach the agent at {agent_url} ({type(exc).__name__}): start it with `voice-agent`, "
            "or drop --agent-url to run one here"
        ) from exc
    except RelayError as exc:
        raise SpeakError(f"{agent_url} did not answer with agent events ({exc.message}): is it a voice agent?") from exc


def speak(args: argparse.Namespace) -> int:
    problem = check_prompts([args.prompt])
    if problem is not None:
        print(f"relay speak: {problem}", file=sys.stderr)
        return 2
    try:
        config = agent_config_from(args)
    except ConfigError as exc:
        print(f"relay speak: {exc.message}", file=sys.stderr)
        return 2
    from relay_local.stack import VoiceStack  # noqa: PLC0415 - the servers' imports only once they are needed

    if args.agent_url is None:
        starting = "the agent" if args.tts_url else "the TTS container (real Kokoro model) and the agent"
        print(f"[starting {starting} on loopback...]", file=sys.stderr)
    try:
        with VoiceStack(
            tts_url=args.tts_url, agent_url=args.agent_url, agent_config=config, tts_transport=args.tts_transport
        ) as stack:
            result = asyncio.run(_speak(args, stack.agent_url))
    except SpeakError as exc:
        print(f"\nrelay speak: {exc}", file=sys.stderr)
        return 1
    print()
    terminal = result.terminal
    if isinstance(terminal, AgentFailed):
        print(f"relay speak: the agent reported {terminal.code}: {terminal.message}; nothing written", file=sys.stderr)
        return 1
    if not isinstance(terminal, AgentEnd) or terminal.status != "completed" or not result.pcm:
        print("relay speak: the turn ended without its audio; nothing written", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(wav_bytes(result.pcm))
    ttfa = "n/a" if result.time_to_first_audio_s is None else f"{result.time_to_first_audio_s * 1000:.0f} ms"
    print(
        f"time to first audio: {ttfa}; audio {AudioPiece.pcm(result.pcm).duration_s:.2f} s "
        f"in {result.elapsed_s:.2f} s; wrote {args.out}",
    )
    return 0
