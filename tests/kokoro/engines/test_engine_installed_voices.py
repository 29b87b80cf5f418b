"""Installed voices beside the embedded ones (engines/__init__.py load_engine): af_heart installed in a temporary
cache reads English by default, through the real model, and Whisper hears it; the start-up log names the voices."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kokoro_server.engines import EngineConfig, assemble_int8_model, load_engine
from kokoro_server.voices_cli import install_packs, packs_at

ENGLISH = "The quick brown fox jumps over the lazy dog. It was a bright and sunny morning."
EMBEDDED = ["jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo"]


@pytest.mark.slow
def test_af_heart_installed_reads_english_by_default(
    official_voices: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    asr: Any,
    whisper_model: Any,
) -> None:
    model = assemble_int8_model()  # from the real cache, before the temporary one takes its place
    cache = tmp_path / "cache"
    install_packs(packs_at(official_voices / "af_heart.pt"), cache / "voices")
    monkeypatch.setenv("KOKORO_RELAY_CACHE", str(cache))
    monkeypatch.setenv("KOKORO_INSTALLED_VOICES", "on")
    with caplog.at_level(logging.INFO, logger="kokoro_server.engines"):
        engine = load_engine(EngineConfig(model_path=model, threads=2))
    assert engine.default_voice == "af_heart"
    assert engine.voices() == sorted(["af_heart", *EMBEDDED])
    said = " ".join(record.getMessage() for record in caplog.records)
    assert "1 installed from" in said and "(af_heart)" in said and "default voice af_heart" in said

    audio = engine.synthesize(ENGLISH, voice=engine.default_voice, speed=1.0)
    assert 3.0 < len(audio) / engine.sample_rate < 12.0
    pcm = (np.clip(audio, -1.0, 1.0) * 32767).astype("<i2").tobytes()
    heard = asr.transcribe(whisper_model, pcm, engine.sample_rate)
    assert asr.word_error_rate([ENGLISH], [heard]) < 0.35, heard

    off = load_engine(EngineConfig(model_path=model, threads=2, installed_voices=False))
    assert (off.default_voice, off.voices()) == ("jf_alpha", EMBEDDED)
