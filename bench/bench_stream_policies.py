"""Whole replies with every speech policy on, streaming within a segment on and off, against every policy off (RAW).

Issue 12's intelligibility target (policies on <= off + 0.01 Whisper WER) must hold with the decoder streamed too,
and issue 21's (streamed <= whole-segment decode + 0.005). Each corpus reply (bench/corpus.py ``WER_REPLIES``, 83
replies, about 1,900 words), every segment, is spoken by ``speak_offline`` (the audio a request gets, without the
sockets) three ways: RAW (no trim, no pauses, no first-fragment cut, whole segments), the server's policies with
whole segments, and the server's policies with the decoder streamed on the engine's chunk schedule; Whisper base
transcribes each (tests/asr_support.py, offline) against the reply's text. A fourth arm is a control: the
whole-segment audio with white noise 45 dB below it (inaudible), which shows how far Whisper's output moves for a
change no listener hears.

Every difference is paired (the same texts both ways) and printed with a 95 % bootstrap interval over the texts
(bench/wer_stats.py): a target is met when the interval's upper end is at or below it.

    uv run python bench/bench_stream_policies.py [--replies N] [--margin 32] [--later 48] [--growth 2]
"""

from __future__ import annotations

import sys

from bench_intelligibility import load_asr_support
from benchlib import print_table
from corpus import WER_REPLIES
from stream_options import engine_with_schedule, schedule_of, schedule_parser
from wer_stats import edits_per_text, paired_difference, with_white_noise

from kokoro_server.pcm import float_to_pcm16
from kokoro_server.policy import RAW, SpeechPolicy
from kokoro_server.scheduled_speech import speak_offline
from kokoro_server.silence import pcm16_to_float

POLICIES_TARGET = 0.01
STREAMING_TARGET = 0.005
CONTROL_SNR_DB = 45.0
RAW_ARM = "every policy off (RAW)"
WHOLE_ARM = "policies on, whole segments"
STREAMED_ARM = "policies on, streamed"
CONTROL_ARM = f"policies on, whole segments + noise {CONTROL_SNR_DB:g} dB below"


def main(argv: list[str] | None = None) -> int:
    parser = schedule_parser(__doc__.splitlines()[0])
    parser.set_defaults(replies=len(WER_REPLIES))
    args = parser.parse_args(argv)
    engine = engine_with_schedule(args)
    ways = {
        RAW_ARM: RAW,
        WHOLE_ARM: SpeechPolicy(stream_decoder=False),
        STREAMED_ARM: SpeechPolicy(stream_decoder=True),
    }
    texts = [t for t in WER_REPLIES[: args.replies] if len(t.split()) > 1]
    asr = load_asr_support()
    model = asr.load_whisper()
    words = [len(asr.normalise(text)) for text in texts]
    edits: dict[str, list[int]] = {}
    for name, policy in ways.items():
        audio = [speak_offline(engine, text, policy=policy) for text in texts]
        heard = [asr.transcribe(model, pcm) for pcm in audio]
        edits[name] = edits_per_text(texts, heard, asr.word_error_rate, words)
        print(f"{name}: WER {sum(edits[name]) / sum(words):.4f}", flush=True)
        if name == WHOLE_ARM:
            noisy = [
                asr.transcribe(model, float_to_pcm16(with_white_noise(pcm16_to_float(pcm), CONTROL_SNR_DB, seed=i)))
                for i, pcm in enumerate(audio)
            ]
            edits[CONTROL_ARM] = edits_per_text(texts, noisy, asr.word_error_rate, words)
    comparisons = [
        (STREAMED_ARM, RAW_ARM, f"<= +{POLICIES_TARGET}"),
        (WHOLE_ARM, RAW_ARM, f"<= +{POLICIES_TARGET}"),
        (STREAMED_ARM, WHOLE_ARM, f"<= +{STREAMING_TARGET}"),
        (CONTROL_ARM, WHOLE_ARM, "(Whisper's noise: an inaudible change)"),
    ]
    rows = []
    for b, a, target in comparisons:
        result = paired_difference(words, edits[a], edits[b])
        rows.append((f"{b} vs {a}", *result.row(), target))
    print_table(
        f"Whisper-base WER over {len(texts)} whole replies ({sum(words)} words), {schedule_of(engine)}; "
        "differences paired, 95 % bootstrap interval over the replies",
        ("comparison", "WER A", "WER B", "B - A", "95 % interval", "target"),
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
