"""Where to cut a reply's first segment once the decoder streams: the early first fragment, or sentence ends only.

Issue 21, item 4. The first-fragment cut (``relay_core.text.segmenter.first_fragment``: the first segment ends at a
clause mark or phrase boundary after a few words) was made to bring first sound forward while the whole segment had
to be rendered before any of it could play; it costs prosody (a phrase spoken as if it ended). With the decoder
streamed, the first sound no longer waits for the segment's length, so the cut may no longer be needed. Three
rules, side by side in one run:

- ``whole, early cut``: today's default (no streaming, the early first fragment);
- ``streamed, early cut``: streaming plus the early first fragment;
- ``streamed, sentences``: streaming, the first segment a whole sentence (``first_fragment_words`` off).

For each corpus reply, solo (one scheduler, one worker, 2 threads; the rules alternate per reply): the first
*audible* sound for a listener who starts playing at the first byte (−40 dBFS, ``kokoro_server.silence``), and the
stalls that listener hears (playback reaching audio that has not arrived yet), against the whole reply's synthesis
time. Then Whisper base hears every reply under each rule (``speak_offline``, the audio a request gets) and the WER
differences are paired with a 95 % bootstrap interval (bench/wer_stats.py).

    uv run python bench/bench_first_fragment_rule.py [--replies N] [--wer-replies N] [--no-wer]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time

from benchlib import Listener, print_table
from corpus import WER_REPLIES
from stream_options import engine_with_schedule, schedule_of, schedule_parser
from wer_stats import edits_per_text, paired_difference

from kokoro_server.engines.speech_engine import SpeechEngine
from kokoro_server.policy import SpeechPolicy
from kokoro_server.scheduled_speech import ScheduledSpeech, speak_offline
from kokoro_server.scheduler import Scheduler, SchedulerSession
from relay_core.speech_options import SpeechOptions
from relay_core.text.segmenter import split_sentences

RULES = {
    "whole, early cut": SpeechPolicy(stream_decoder=False),
    "streamed, early cut": SpeechPolicy(stream_decoder=True),
    "streamed, sentences": SpeechPolicy(stream_decoder=True, first_fragment_words=None),
}
BASELINE = "whole, early cut"


async def listen(engine: SpeechEngine, scheduler: Scheduler, text: str) -> tuple[Listener, float]:
    """One reply on a fresh session: what its listener hears, and the whole synthesis time."""
    speech = ScheduledSpeech(engine, scheduler, SchedulerSession("bench"), text=text, options=SpeechOptions("jf_alpha"))
    playback = Listener()
    start = time.perf_counter()
    async for pcm in speech.pcm_segments():
        playback.arrive(pcm, time.perf_counter() - start)
    return playback, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = schedule_parser(__doc__.splitlines()[0])
    parser.set_defaults(replies=34)
    parser.add_argument("--no-wer", action="store_true", help="first sound and stalls only")
    parser.add_argument("--wer-replies", type=int, default=len(WER_REPLIES), help="replies Whisper hears per rule")
    args = parser.parse_args(argv)
    engine = engine_with_schedule(args)
    schedulers = {name: Scheduler(workers=1, name=name, speech=policy) for name, policy in RULES.items()}
    texts = [t for t in WER_REPLIES[: args.replies] if len(t.split()) > 1]
    asyncio.run(listen(engine, schedulers[BASELINE], texts[0]))  # warm-up
    heard: dict[str, list[tuple[str, Listener, float]]] = {name: [] for name in RULES}
    for i, text in enumerate(texts):
        names = list(RULES)
        for name in names[i % len(names) :] + names[: i % len(names)]:
            playback, total = asyncio.run(listen(engine, schedulers[name], text))
            heard[name].append((text, playback, total))
    rows = []
    for name in RULES:
        firsts = [p.first_sound_s or 0.0 for _, p, _ in heard[name]]
        long_first = [p.first_sound_s or 0.0 for t, p, _ in heard[name] if len(split_sentences(t)[0].split()) >= 8]
        stalls = [p.stall_s for _, p, _ in heard[name]]
        ratio = [(p.first_sound_s or 0.0) / total for _, p, total in heard[name]]
        rows.append(
            (
                name,
                f"{statistics.median(firsts) * 1000:.0f}",
                f"{statistics.median(long_first) * 1000:.0f}" if long_first else "-",
                f"{statistics.median(ratio):.3f}",
                f"{sum(1 for s in stalls if s > 0.02)}/{len(stalls)}",
                f"{max(stalls) * 1000:.0f}",
            )
        )
    print_table(
        f"solo, {len(texts)} replies, {schedule_of(engine)}; first audible sound for a listener who plays from the "
        "first byte",
        (
            "rule",
            "median first sound ms",
            "median, 1st sentence >= 8 words, ms",
            "median first sound / whole reply",
            "replies with a stall > 20 ms",
            "longest stall ms",
        ),
        rows,
    )
    for scheduler in schedulers.values():
        scheduler.shutdown()
    if not args.no_wer:
        report_wer(engine, [t for t in WER_REPLIES[: args.wer_replies] if len(t.split()) > 1])
    return 0


def report_wer(engine: SpeechEngine, texts: list[str]) -> None:
    from bench_intelligibility import load_asr_support  # noqa: PLC0415 - Whisper only when asked

    asr = load_asr_support()
    model = asr.load_whisper()
    words = [len(asr.normalise(text)) for text in texts]
    edits = {}
    for name, policy in RULES.items():
        spoken = [speak_offline(engine, text, options=SpeechOptions("jf_alpha"), policy=policy) for text in texts]
        edits[name] = edits_per_text(texts, [asr.transcribe(model, pcm) for pcm in spoken], asr.word_error_rate, words)
        print(f"{name}: WER {sum(edits[name]) / sum(words):.4f}", flush=True)
    comparisons = [(b, BASELINE) for b in RULES if b != BASELINE] + [("streamed, sentences", "streamed, early cut")]
    print_table(
        f"Whisper-base WER over {len(texts)} replies ({sum(words)} words); paired, 95 % bootstrap interval",
        ("comparison", "WER A", "WER B", "B - A", "95 % interval"),
        [(f"{b} vs {a}", *paired_difference(words, edits[a], edits[b]).row()) for b, a in comparisons],
    )


if __name__ == "__main__":
    sys.exit(main())
