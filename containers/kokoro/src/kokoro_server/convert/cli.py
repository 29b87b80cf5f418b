"""``convert-weights``: rebuild KModel weights from the int8 ONNX and write a weights directory.

The converter (torch) is imported once the command line is parsed: ``--help`` and a mistyped option answer at
once."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from kokoro_server.convert.errors import ConversionError, CoverageError
from kokoro_server.engines.model_files import assemble_int8_model, default_voices_path
from relay_core.cli_usage import UsageParser, given_path, non_empty


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also used by the server's ``convert-weights`` subcommand)."""
    parser = UsageParser(
        prog="kokoro-server convert-weights",
        description="Rebuild kokoro.KModel weights (config.json, kokoro-v1_0.pth, voices/*.pt) "
        "from the shipped int8 Kokoro ONNX.",
    )
    parser.add_argument("--onnx", type=given_path, help="int8 ONNX to convert (default: the shipped model parts)")
    parser.add_argument(
        "--out",
        type=lambda text: Path(non_empty(text)),
        help="weights directory to write (default: the cache the torch engine uses)",
    )
    parser.add_argument(
        "--verify", action="store_true", help="also run torch against ONNX Runtime and print the agreement"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the conversion; returns the process exit code (0 ok, 1 conversion failed)."""
    args = build_parser().parse_args(argv)
    from kokoro_server.convert.converter import convert_onnx_to_kmodel  # noqa: PLC0415 - torch, once parsed
    from kokoro_server.convert.store import ensure_converted_weights, write_weights_dir  # noqa: PLC0415
    from kokoro_server.convert.verify import agreement_report  # noqa: PLC0415

    started = time.perf_counter()
    onnx_path: Path = args.onnx or assemble_int8_model()
    try:
        if args.out is None and args.onnx is None:
            out = ensure_converted_weights()
        else:
            result = convert_onnx_to_kmodel(onnx_path)
            print(result.report.summary())
            out = write_weights_dir(result, default_voices_path(), args.out or Path("kokoro-weights"))
    except (ConversionError, CoverageError) as exc:
        print(f"conversion failed: {exc}", file=sys.stderr)
        return 1
    print(f"weights directory: {out} ({time.perf_counter() - started:.1f} s)")
    if args.verify:
        print(agreement_report(onnx_path, out).format())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
