"""``kokoro-server``: run the TTS container app, locally or as SageMaker's ``serve``; convert weights.

- ``kokoro-server [--host H] [--port N] [--engine onnx|torch] [--model PATH] [--voices PATH] [--weights-dir DIR]
  [--default-voice V] [--lang L] [--workers N] [--threads N]``: serve (options override ``KOKORO_*`` variables).
- ``kokoro-server serve``: what SageMaker runs: the same app on 0.0.0.0:8080, settings from the environment.
- ``kokoro-server convert-weights ...``: hand the rest of the arguments to the weights converter (needs the
  ``torch`` extra, imported only then).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import uvicorn

from kokoro_server.app import create_app
from kokoro_server.config import ENGINE_NAMES, SAGEMAKER_HOST, SAGEMAKER_PORT, ConfigError, ServerConfig


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kokoro-server",
        description="Kokoro-82M TTS server: GET /ping, POST /invocations, WS /invocations-bidirectional-stream.",
        epilog="Subcommands: 'serve' (SageMaker: 0.0.0.0:8080, settings from KOKORO_* variables), "
        "'convert-weights ...' (see 'kokoro-server convert-weights --help').",
    )
    parser.add_argument("--host", help="address to listen on (default KOKORO_HOST or 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port (default KOKORO_PORT or 8080; 0 picks a free one)")
    parser.add_argument("--engine", choices=ENGINE_NAMES, help="inference backend (default KOKORO_ENGINE or onnx)")
    parser.add_argument("--model", type=Path, help="ONNX model file (default: the embedded int8 Kokoro-82M)")
    parser.add_argument("--voices", type=Path, help="voice packs (.npz/.bin file, or a directory of .pt)")
    parser.add_argument("--weights-dir", type=Path, help="torch weights directory (config.json, .pth, voices/)")
    parser.add_argument("--default-voice", help="voice used when a request names none")
    parser.add_argument("--lang", help="espeak-ng language of the G2P front end (default en-us)")
    parser.add_argument(
        "--workers", type=int, help="inference worker threads (default: cores + 1, at most 8, for onnx; 2 for torch)"
    )
    parser.add_argument("--threads", type=int, help="CPU threads per inference (default: every core)")
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
    )


def serve(config: ServerConfig, *, log_level: str = "info") -> None:
    """Run the app under uvicorn until interrupted."""
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    uvicorn.run(create_app(config), host=config.host, port=config.port, log_level=log_level, ws="websockets-sansio")


def parse_command(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> tuple[ServerConfig, str]:
    """The settings and log level for a serving command line (``serve`` or options); exits with a usage
    message (status 2) on a bad option or setting."""
    args_list = list(argv)
    sagemaker = args_list[:1] == ["serve"]
    if sagemaker:
        args_list = args_list[1:]
    parser = _parser()
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
    serve(config, log_level=log_level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
