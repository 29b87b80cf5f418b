"""``python -m relay_local.bedrock [--port 8083] [--preload smollm2]``: the local Bedrock runtime on its own, for an
agent started by hand (``AWS_ENDPOINT_URL_BEDROCK_RUNTIME=http://127.0.0.1:8083 uv run voice-agent``); Ctrl-C (or
SIGTERM) stops it, however often it arrives, with status 0."""

from __future__ import annotations

import argparse
import signal

from relay_core.agent.defaults import LOCAL_BEDROCK_PORT
from relay_local.bedrock.models import MODEL_NAMES, ModelRegistry, resolve_model_name
from relay_local.bedrock.standin import ENDPOINT_ENV, BedrockStandIn

DEFAULT_PORT = LOCAL_BEDROCK_PORT
STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})
"""What stops the stand-in. They are blocked in every thread from the start and taken only by the main thread's
``sigwait``: a Ctrl-C is never left to a server or model thread (where Python only notes it, and a main thread
parked in an untimed wait would never run its handler), never raises ``KeyboardInterrupt`` outside the ``try`` that
stops the server, and a repeat during the stop is ignored."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m relay_local.bedrock", description=__doc__)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"loopback port (default {DEFAULT_PORT})")
    parser.add_argument("--preload", choices=sorted(MODEL_NAMES), help="load this model before serving")
    args = parser.parse_args(argv)
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)  # before any thread starts: every thread inherits it
    models = ModelRegistry()
    if args.preload:
        models.preload(resolve_model_name(args.preload))
    standin = BedrockStandIn(models, port=args.port).start()
    print(f"local Bedrock runtime: {ENDPOINT_ENV}={standin.endpoint_url}  (models: {', '.join(models.model_ids)})")
    print(f"OpenAI-compatible: {standin.openai_base_url}; Ctrl-C stops", flush=True)
    try:
        signal.sigwait(STOP_SIGNALS)
    finally:
        standin.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
