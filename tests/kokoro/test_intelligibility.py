"""Whisper listens to the container: the speech policies keep speech intelligible (issue 12), and the word timings
agree with the words Whisper hears (issue 13).

Whisper base (faster-whisper, int8, CPU; the model joined from the PyPI parts by tests/asr_support.py, nothing
downloaded) hears ``asr.ASR_TEXT`` spoken once through the captioned-speech route (a fresh request with the
server's defaults: first-fragment cut, trims, sentence pause, word timings) and once with every policy off. One
module fixture does that work for both tests. The whole corpus is measured by bench/bench_intelligibility.py.
"""

from __future__ import annotations

import statistics
from typing import Any

import pytest

from kokoro_server.engines import Engine

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def heard(asr: Any, whisper_model: Any, tts_server: Any, onnx_engine: Engine) -> Any:
    """``asr.HeardSpeech``: the text spoken with the policies on (through the server) and off, and what Whisper
    heard of each."""
    return asr.hear_on_and_off(whisper_model, tts_server.http_url, onnx_engine)


def test_policies_keep_speech_intelligible(asr: Any, heard: Any) -> None:
    assert len(heard.on_pcm) < 0.9 * len(heard.off_pcm), "the policies trimmed this speech"
    wer_on = asr.word_error_rate([heard.text], [heard.on_heard])
    wer_off = asr.word_error_rate([heard.text], [heard.off_heard])
    assert wer_off < 0.25, heard.off_heard  # the recogniser itself understands this voice
    assert wer_on <= wer_off + 0.01, (wer_on, wer_off, heard.on_heard, heard.off_heard)


def test_word_timings_agree_with_the_words_whisper_hears(asr: Any, heard: Any) -> None:
    written = heard.text.split()
    assert [w.word for w in heard.on_words] == written
    pairs = asr.matched_words(heard.on_words, heard.on_recognised)
    assert len(pairs) >= 0.6 * len(written), (heard.on_heard, pairs)
    differences = [abs(recognised.start_s - timed.start_s) for timed, recognised in pairs]
    assert statistics.median(differences) <= 0.1, sorted(differences)
