"""``kokoro-server``: run the TTS container app, locally or as SageMaker's ``serve``; convert weights.

- ``kokoro-server [--host H] [--port N] [--engine onnx|torch] [--model PATH] [--voices PATH] [--weights-dir DIR]
  [--default-voice V] [--lang L] [--workers N] [--threads N] [--cors-origins O,...]``: serve locally, by default on
  127.0.0.1:8081 (where the voice agent's default TTS URL points); options override ``KOKORO_*`` variables.
- ``kokoro-server serve``: what SageMaker runs: the same app on 0.0.0.0:8080, settings from the environment.
- ``kokoro-server convert-weights ...``: hand the rest of the arguments to the weights converter (needs the
  ``torch`` extra, imported only then).
- ``kokoro-server --version``.

A model that cannot load (a bad path, ``--lang klingon``) stops the server: the command exits with status 1 and
the reason on stderr, instead of answering 503 forever.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import logging
import sys
import threading
from collections.abc import Mapping, Sequence
from types import FrameType

import uvicorn

from kokoro_server.app import create_app
from kokoro_server.config import (
    ENGINE_NAMES,
    LOCAL_HOST,
    LOCAL_PORT,
    SAGEMAKER_HOST,
    SAGEMAKER_PORT,
    ConfigError,
    ServerConfig,
)
from relay_core.cli_usage import UsageParser, given_path, non_empty

PROG = "kokoro-server"
LOAD_FAILED = 1
"""Exit status when the model could not be loaded."""


def version() -> str:
    return importlib.metadata.version("kokoro-server")


def _parser(*, sagemaker: bool = False) -> argparse.ArgumentParser:
    if sagemaker:
        parser = UsageParser(
            prog=f"{PROG} serve",
            description=f"What SageMaker (and the images) run: the TTS app on {SAGEMAKER_HOST}:{SAGEMAKER_PORT}, "
            "settings from KOKORO_* variables (the options below override them).",
        )
        host_default = f"{SAGEMAKER_HOST}"
        port_default = f"{SAGEMAKER_PORT}"
    else:
        parser = UsageParser(
            prog=PROG,
            description="Kokoro-82M TTS server: GET /ping, POST /invocations, WS /invocations-bidirectional-stream, "
            "POST /v1/audio/speech (OpenAI-compatible).",
            epilog=f"Subcommands: 'serve' (SageMaker: {SAGEMAKER_HOST}:{SAGEMAKER_PORT}, settings from KOKORO_* "
            f"variables; see '{PROG} serve --help'), 'convert-weights ...' (see '{PROG} convert-weights --help').",
        )
        host_default = f"KOKORO_HOST or {LOCAL_HOST}"
        port_default = f"KOKORO_PORT or {LOCAL_PORT}, where the voice agent looks by default"
    parser.add_argument("--version", action="version", version=f"{PROG} {version()}")
    parser.add_argument("--host", type=non_empty, help=f"address to listen on (default {host_default})")
    parser.add_argument("--port", type=int, help=f"port (default {port_default}; 0 picks a free one)")
    parser.add_argument("--engine", choices=ENGINE_NAMES, help="inference backend (default KOKORO_ENGINE or onnx)")
    parser.add_argument("--model", type=given_path, help="ONNX model file (default: the embedded int8 Kokoro-82M)")
    parser.add_argument("--voices", type=given_path, help="voice packs (.npz/.bin file, or a directory of .pt)")
    parser.add_argument("--weights-dir", type=given_path, help="torch weights directory (config.json, .pth, voices/)")
    parser.add_argument("--default-voice", type=non_empty, help="voice used when a request names none")
    parser.add_argument("--lang", type=non_empty, help="espeak-ng language of the G2P front end (default en-us)")
    parser.add_argument("--workers", type=int, help="inference worker threads (default: 1 for onnx; 2 for torch)")
    parser.add_argument("--threads", type=int, help="CPU threads per inference (default: every core)")
    parser.add_argument(
        "--cors-origins",
        help="comma-separated origins allowed to call the HTTP routes from a browser, or '*' "
        "(default KOKORO_CORS_ORIGINS or none: CORS off)",
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return parser


def config_from_args(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> ServerConfig:
    """Environment settings, overridden by the options given on the command line."""
    base = ServerConfig.from_env(environ)
    return base.with_overrides(
        host=args.host,
        port=args.port,
        engine=args.engine,
        model_path=args.model,
        voices_path=args.voices,
        weights_dir=args.weights_dir,
        default_voice=args.default_voice,
        lang=args.lang,
        workers=args.workers,
        threads=args.threads,
        cors_origins=None if args.cors_origins is None else ServerConfig.parse_origins(args.cors_origins),
    )


class _Server(uvicorn.Server):
    """uvicorn's server that stops gracefully on the first SIGINT/SIGTERM and ignores the repeats: a terminal sends
    Ctrl-C to the whole process group (``uv run`` passes its copy on too), and uvicorn would turn a second one
    into a forced exit that cancels the shutdown mid-way (tracebacks, an unclean stop)."""

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if not self.should_exit:
            super().handle_exit(sig, frame)


def serve(config: ServerConfig, *, log_level: str = "info") -> int:
    """Run the app under uvicorn until interrupted (Ctrl-C or SIGTERM, however often); 0 then, with no traceback.
    If the model fails to load the server stops and the reason goes to stderr: returns :data:`LOAD_FAILED`."""
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    app = create_app(config)
    state = app.state.server
    server = _Server(
        uvicorn.Config(app, host=config.host, port=config.port, log_level=log_level, ws="websockets-sansio")
    )

    def stop_if_the_load_fails() -> None:
        state.settled.wait()
        if state.load_error is not None:
            server.should_exit = True

    threading.Thread(target=stop_if_the_load_fails, name="kokoro-load-watch", daemon=True).start()
    # uvicorn re-raises the Ctrl-C it stopped on once it has stopped: the stop is done, and clean
    with contextlib.suppress(KeyboardInterrupt):
        server.run()
    if state.load_error is not None:
        print(f"{PROG}: the model failed to load: {state.load_error}", file=sys.stderr)
        return LOAD_FAILED
    return 0


def parse_command(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> tuple[ServerConfig, str]:
    """The settings and log level for a serving command line (``serve`` or options); exits with a usage
    message (status 2) on a bad option or setting."""
    args_list = list(argv)
    sagemaker = args_list[:1] == ["serve"]
    if sagemaker:
        args_list = args_list[1:]
    parser = _parser(sagemaker=sagemaker)
    args = parser.parse_args(args_list)
    try:
        config = config_from_args(args, environ)
        if sagemaker:
            config = config.with_overrides(host=args.host or SAGEMAKER_HOST, port=args.port or SAGEMAKER_PORT)
    except ConfigError as exc:
        parser.error(str(exc))
    return config, args.log_level


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``kokoro-server`` script."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["convert-weights"]:
        from kokoro_server.convert.cli import main as convert_main  # noqa: PLC0415 - needs the torch extra

        return convert_main(args_list[1:])
    config, log_level = parse_command(args_list)
    return serve(config, log_level=log_level)


if __name__ == "__main__":
    sys.exit(main())
