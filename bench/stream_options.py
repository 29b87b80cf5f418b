"""The chunk-schedule options the streaming benchmarks share, and the int8 engine they run with that schedule.

Run as a script, a ``kokoro-server`` whose engines decode on a given schedule (the load bench's servers side by
side): ``python bench/stream_options.py serve 32:12:48*2 -- --host 127.0.0.1 --port 8081``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence

from corpus import REPLIES

from kokoro_server.engines import Engine, EngineConfig, load_engine
from kokoro_server.engines.chunk_plan import ChunkSchedule, decode_windows
from kokoro_server.engines.onnx_synth import OnnxSynthesizer


def schedule_parser(description: str) -> argparse.ArgumentParser:
    """``--replies`` and the chunk schedule (``--margin``, ``--first``, ``--later``, ``--growth``,
    ``--lead-context``; defaults: the engine's own schedule)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--replies", type=int, default=len(REPLIES))
    default = ChunkSchedule()
    parser.add_argument("--margin", type=int, default=default.margin_frames)
    parser.add_argument("--first", type=int, default=default.first_frames)
    parser.add_argument("--later", type=int, default=default.later_frames)
    parser.add_argument("--growth", type=int, default=default.growth)
    parser.add_argument(
        "--max-chunks",
        type=lambda value: None if value == "none" else int(value),
        default=default.max_chunks,
        help="chunks per segment at most, the last absorbing the remainder ('none': no limit, before issue 29)",
    )
    parser.add_argument(
        "--lead-context",
        type=lambda value: None if value == "all" else int(value),
        default=default.lead_context_frames,
        help="leading-padding frames the first chunk decodes ('all': every one)",
    )
    return parser


def engine_with_schedule(args: argparse.Namespace) -> Engine:
    """The int8 ONNX engine (2 threads, as the server runs here) decoding with the options' chunk schedule."""
    engine = load_engine(EngineConfig(threads=2))
    synth = engine._synthesizer
    assert isinstance(synth, OnnxSynthesizer)
    synth.schedule = ChunkSchedule(
        first_frames=args.first,
        later_frames=args.later,
        margin_frames=args.margin,
        growth=args.growth,
        lead_context_frames=args.lead_context,
        max_chunks=args.max_chunks,
    )
    return engine


def schedule_of(engine: Engine) -> ChunkSchedule:
    """The chunk schedule ``engine`` decodes with (for the tables' titles)."""
    synth = engine._synthesizer
    assert isinstance(synth, OnnxSynthesizer)
    return synth.schedule


def parse_schedule(spec: str) -> ChunkSchedule:
    """``margin:first:later[*growth][/max_chunks]`` in frames, the other fields the defaults': ``32:12:48*2``
    is issue 21's schedule (no limit on the chunks: 12, 48, 96, 192 ... each on its own window), ``32:12:48*2/2``
    the default since issue 29 (the first chunk, then the rest on one window)."""
    body, _, cap = spec.partition("/")
    margin, first, later = body.split(":")
    size, _, growth = later.partition("*")
    return ChunkSchedule(
        margin_frames=int(margin),
        first_frames=int(first),
        later_frames=int(size),
        growth=int(growth or 1),
        max_chunks=int(cap) if cap else None,
    )


def spelled(schedule: ChunkSchedule) -> str:
    """``schedule`` as :func:`parse_schedule` reads it."""
    growth = f"*{schedule.growth}" if schedule.growth > 1 else ""
    cap = f"/{schedule.max_chunks}" if schedule.max_chunks is not None else ""
    return f"{schedule.margin_frames}:{schedule.first_frames}:{schedule.later_frames}{growth}{cap}"


def decoder_work(segments: Iterable[tuple[int, int, bool]], schedule: ChunkSchedule) -> tuple[int, int, int]:
    """Over ``segments`` (frames, leading padding frames, streamed): the frames, the frames the decoder runs
    (streamed ones on ``schedule``'s windows, the others whole) and the most windows one segment takes."""
    frames = decoded = most = 0
    for count, lead, streamed in segments:
        windows = decode_windows(count, lead_frames=lead, schedule=schedule, chunked=streamed)
        frames += count
        decoded += sum(w.hi - w.lo for w in windows)
        most = max(most, len(windows))
    return frames, decoded, most


def serve(argv: Sequence[str]) -> int:
    """``serve SPEC -- ARGS``: ``kokoro-server ARGS`` with its onnx engine decoding on the schedule ``SPEC``."""
    spec, *rest = argv
    schedule = parse_schedule(spec)
    from kokoro_server import cli  # noqa: PLC0415
    from kokoro_server.engines import onnx_synth  # noqa: PLC0415

    def chosen() -> ChunkSchedule:
        return schedule

    setattr(onnx_synth, "ChunkSchedule", chosen)  # noqa: B010 - the engine builds ChunkSchedule() by default
    return cli.main(rest[1:] if rest[:1] == ["--"] else rest)


if __name__ == "__main__":
    if sys.argv[1:2] != ["serve"]:
        sys.exit("usage: python bench/stream_options.py serve SPEC -- KOKORO_SERVER_ARGS")
    sys.exit(serve(sys.argv[2:]))
