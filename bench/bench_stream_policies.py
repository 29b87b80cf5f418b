"""Whole replies with every speech policy on, streaming within a segment on and off, against every policy off (RAW).

Issue 12's intelligibility target (policies on <= off + 0.01 Whisper WER) must hold with the decoder streamed too.
Each corpus reply, every segment, is spoken by ``speak_offline`` (the audio a request gets, without the sockets)
three ways: RAW (no trim, no pauses, no first-fragment cut, whole segments), the server's policies with whole
segments, and the server's policies with the decoder streamed on the engine's chunk schedule; Whisper base
transcribes each (tests/asr_support.py, offline) against the reply's text.

    uv run python bench/bench_stream_policies.py [--replies N] [--margin 32] [--later 48] [--growth 2]
"""

from __future__ import annotations

import sys

from bench_intelligibility import load_asr_support
from benchlib import print_table
from corpus import REPLIES
from stream_options import engine_with_schedule, schedule_of, schedule_parser

from kokoro_server.policy import RAW, SpeechPolicy
from kokoro_server.scheduled_speech import speak_offline

TARGET = 0.01


def main(argv: list[str] | None = None) -> int:
    args = schedule_parser(__doc__.splitlines()[0]).parse_args(argv)
    engine = engine_with_schedule(args)
    ways = {
        "every policy off (RAW)": RAW,
        "policies on, whole segments": SpeechPolicy(stream_decoder=False),
        "policies on, streamed": SpeechPolicy(stream_decoder=True),
    }
    texts = [t for t in REPLIES[: args.replies] if len(t.split()) > 1]
    asr = load_asr_support()
    model = asr.load_whisper()
    wer = {}
    for name, policy in ways.items():
        heard = [
            asr.transcribe(model, speak_offline(engine, text, voice=engine.default_voice, policy=policy))
            for text in texts
        ]
        wer[name] = asr.word_error_rate(list(texts), heard)
        print(f"{name}: WER {wer[name]:.4f}", flush=True)
    off = wer["every policy off (RAW)"]
    print_table(
        f"Whisper-base WER over {len(texts)} whole replies, {schedule_of(engine)} (target: on <= off + {TARGET})",
        ("speech", "WER", "vs every policy off"),
        [(name, f"{value:.4f}", f"{value - off:+.4f}") for name, value in wer.items()],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
