"""``voice-agent``: run the agent app locally (the same app AgentCore runs on port 8080).

Flags override the ``VOICE_AGENT_*`` environment; with neither, the agent talks to a container at
ws://127.0.0.1:8000 and replies with the offline ``speak`` echo model.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys

from relay_core import limits
from voice_agent.app import create_app
from voice_agent.config import AgentConfig, ModelKind, TransportKind
from voice_agent.errors import ConfigError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="voice-agent", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=limits.AGENTCORE_PORT, help="port (default 8080)")
    parser.add_argument("--transport", choices=[k.value for k in TransportKind], help="how to reach the TTS")
    parser.add_argument("--tts-url", help="WebSocket URL of the container's /invocations-bidirectional-stream")
    parser.add_argument("--sagemaker-endpoint", help="SageMaker endpoint name (with --transport sagemaker)")
    parser.add_argument("--region", help="AWS region for Bedrock and SageMaker")
    parser.add_argument(
        "--model",
        choices=[k.value for k in ModelKind],
        help="speak = offline echo model (no LLM; the local default); bedrock; openai/ollama = OpenAI-compatible",
    )
    parser.add_argument("--model-id", help="model id (Bedrock model id, or the server's model name)")
    parser.add_argument("--base-url", help="base URL of an OpenAI-compatible or Ollama server")
    parser.add_argument("--speak-rate", type=float, help="speak model: tokens per second (default 40)")
    parser.add_argument("--voice", help="default voice when a payload names none")
    parser.add_argument(
        "--first-fragment-words",
        type=int,
        help="first-fragment policy: words before the first clause cut (0 turns the policy off)",
    )
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    return parser


def config_from_args(args: argparse.Namespace, base: AgentConfig) -> AgentConfig:
    """``base`` with every flag given on the command line applied."""
    changes: dict[str, object] = {}
    if args.transport:
        changes["transport"] = TransportKind(args.transport)
    if args.tts_url:
        changes["tts_url"] = args.tts_url
    if args.sagemaker_endpoint:
        changes["sagemaker_endpoint"] = args.sagemaker_endpoint
    if args.region:
        changes["aws_region"] = args.region
    if args.model:
        changes["model"] = ModelKind(args.model)
    if args.model_id:
        changes["model_id"] = args.model_id
    if args.base_url:
        changes["model_base_url"] = args.base_url
    if args.speak_rate is not None:
        changes["speak_tokens_per_s"] = args.speak_rate
    if args.voice:
        changes["voice"] = args.voice
    if args.first_fragment_words is not None:
        changes["first_fragment_words"] = args.first_fragment_words or None
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = config_from_args(args, AgentConfig.from_env())
    except ConfigError as exc:
        print(f"voice-agent: {exc.message}", file=sys.stderr)
        return 2
    app = create_app(config)
    app.run(port=args.port, host=args.host)
    return 0


if __name__ == "__main__":
    sys.exit(main())
