"""``kokoro-server``: run the TTS container app, locally or as SageMaker's ``serve``; convert weights.

- ``kokoro-server [--host H] [--port N] [--engine onnx|torch] [--model PATH] [--voices PATH] [--weights-dir DIR]
  [--default-voice V] [--lang L] [--workers N] [--threads N] [--cors-origins O,...]``: serve locally, by default on
  127.0.0.1:8081 (where the voice agent's default TTS URL points); options override ``KOKORO_*`` variables.
- ``kokoro-server serve``: what SageMaker runs: the same app on 0.0.0.0:8080, settings from the environment.
- ``kokoro-server convert-weights ...``: hand the rest of the arguments to the weights converter (needs the
  ``torch`` extra, imported only then).
- ``kokoro-server voices list | install PATH... | fetch [NAMES|--all]``: the voice packs in the cache
  (:mod:`kokoro_server.voices_cli`; numpy only, no server).
- ``kokoro-server --version``.

A model that cannot load (a bad path, ``--lang klingon``) stops the server: the command exits with status 1 and
the reason on stderr, instead of answering 503 forever.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kokoro_server.config import (
    LOCAL_HOST,
    LOCAL_PORT,
    SAGEMAKER_HOST,
    SAGEMAKER_PORT,
    SETTINGS,
    ConfigError,
    ServerConfig,
)
from relay_core.cli_usage import UsageParser

PROG = "kokoro-server"
LOAD_FAILED = 1
"""Exit status when the model could not be loaded."""


def version() -> str:
    return importlib.metadata.version("kokoro-server")


@dataclass(frozen=True, slots=True)
class Subcommand:
    """A first argument that hands the rest of the command line to a command of its own; ``run`` imports what
    that command needs, so each loads only its own modules (the weights converter no server, no uvicorn)."""

    name: str
    usage: str
    """How ``kokoro-server --help`` names it."""
    summary: str
    run: Callable[[list[str]], int]


def _serve_for_sagemaker(argv: list[str]) -> int:
    config, log_level = parse_command(["serve", *argv])
    return serve(config, log_level=log_level)


def _voices(argv: list[str]) -> int:
    from kokoro_server.voices_cli import main as voices_main  # noqa: PLC0415 - numpy only, never the server

    return voices_main(argv)


def _convert_weights(argv: list[str]) -> int:
    from kokoro_server.convert.cli import main as convert_main  # noqa: PLC0415 - needs the torch extra

    return convert_main(argv)


SUBCOMMANDS: tuple[Subcommand, ...] = (
    Subcommand(
        "serve",
        "serve",
        f"SageMaker: {SAGEMAKER_HOST}:{SAGEMAKER_PORT}, settings from KOKORO_* variables; see '{PROG} serve --help'",
        _serve_for_sagemaker,
    ),
    Subcommand("convert-weights", "convert-weights ...", f"see '{PROG} convert-weights --help'", _convert_weights),
    Subcommand(
        "voices",
        "voices list|install PATH...|fetch [NAMES|--all]",
        f"the voice packs in the cache; see '{PROG} voices --help'",
        _voices,
    ),
)
"""``kokoro-server``'s subcommands, in the order its help lists them; any other command line serves locally."""


def build_parser(*, sagemaker: bool = False) -> argparse.ArgumentParser:
    """The parser of a serving command line: ``kokoro-server [options]``, or ``kokoro-server serve [options]``
    with ``sagemaker``; one option per flagged row of :data:`~kokoro_server.config.SETTINGS`, plus ``--log-level``."""
    if sagemaker:
        parser = UsageParser(
            prog=f"{PROG} serve",
            description=f"What SageMaker (and the images) run: the TTS app on {SAGEMAKER_HOST}:{SAGEMAKER_PORT}, "
            "settings from KOKORO_* variables (the options below override them).",
        )
        defaults = {"host": f"{SAGEMAKER_HOST}", "port": f"{SAGEMAKER_PORT}"}
    else:
        subcommands = ", ".join(f"'{command.usage}' ({command.summary})" for command in SUBCOMMANDS)
        parser = UsageParser(
            prog=PROG,
            description="Kokoro-82M TTS server: GET /ping, POST /invocations, WS /invocations-bidirectional-stream, "
            "POST /v1/audio/speech (OpenAI-compatible).",
            epilog=f"Subcommands: {subcommands}.",
        )
        defaults = {
            "host": f"KOKORO_HOST or {LOCAL_HOST}",
            "port": f"KOKORO_PORT or {LOCAL_PORT}, where the voice agent looks by default",
        }
    parser.add_argument("--version", action="version", version=f"{PROG} {version()}")
    for setting in SETTINGS:
        if (flag := setting.flag) is not None:
            parser.add_argument(flag.name, type=flag.type, choices=flag.choices, help=flag.help.format(**defaults))
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return parser


def config_from_args(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> ServerConfig:
    """Environment settings, overridden by the options given on the command line."""
    overrides: dict[str, object] = {}
    for setting in SETTINGS:
        if setting.flag is not None:
            overrides.update(setting.fields_of(getattr(args, setting.flag.dest)))
    return ServerConfig.from_env(environ).with_overrides(**overrides)


def serve(config: ServerConfig, *, log_level: str = "info") -> int:
    """Run the app under uvicorn until interrupted (Ctrl-C or SIGTERM, however often); 0 then, with no traceback.
    If the model fails to load the server stops and the reason goes to stderr: returns :data:`LOAD_FAILED`."""
    from kokoro_server.serving import run  # noqa: PLC0415 - uvicorn and the app, only when serving

    load_error = run(config, log_level=log_level)
    if load_error is not None:
        print(f"{PROG}: the model failed to load: {load_error}", file=sys.stderr)
        return LOAD_FAILED
    return 0


def parse_command(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> tuple[ServerConfig, str]:
    """The settings and log level for a serving command line (``serve`` or options); exits with a usage
    message (status 2) on a bad option or setting."""
    args_list = list(argv)
    sagemaker = args_list[:1] == ["serve"]
    if sagemaker:
        args_list = args_list[1:]
    parser = build_parser(sagemaker=sagemaker)
    args = parser.parse_args(args_list)
    try:
        config = config_from_args(args, environ)
        if sagemaker:
            config = config.with_overrides(host=args.host or SAGEMAKER_HOST, port=args.port or SAGEMAKER_PORT)
    except ConfigError as exc:
        parser.error(str(exc))
    return config, args.log_level


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``kokoro-server`` script: a subcommand of :data:`SUBCOMMANDS`, or serve locally."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    for command in SUBCOMMANDS:
        if args_list[:1] == [command.name]:
            return command.run(args_list[1:])
    config, log_level = parse_command(args_list)
    return serve(config, log_level=log_level)


if __name__ == "__main__":
    sys.exit(main())
