"""The chunk-schedule options the streaming benchmarks share, and the int8 engine they run with that schedule."""

from __future__ import annotations

import argparse

from corpus import REPLIES

from kokoro_server.engines import Engine, EngineConfig, load_engine
from kokoro_server.engines.chunk_plan import ChunkSchedule
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
    )
    return engine


def schedule_of(engine: Engine) -> ChunkSchedule:
    """The chunk schedule ``engine`` decodes with (for the tables' titles)."""
    synth = engine._synthesizer
    assert isinstance(synth, OnnxSynthesizer)
    return synth.schedule
