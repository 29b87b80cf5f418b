"""The real Kokoro-82M int8 ONNX engine: planning, real speech, determinism, speed, model layouts."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import onnx
import pytest

from kokoro_server.engines import (
    Engine,
    EngineConfig,
    EngineError,
    InvalidRequestError,
    ModelFilesError,
    Segment,
    UnknownVoiceError,
    load_engine,
)
from kokoro_server.engines.model_files import assemble_int8_model, default_voices_path
from kokoro_server.engines.onnx_synth import OnnxSynthesizer
from kokoro_server.engines.voices import VoiceBank

pytestmark = pytest.mark.slow

SHORT = "Hello, this is a short test."
FOUR_SENTENCES = (
    "Kokoro Relay makes an agent speak while it is still thinking. "
    "Each sentence goes to the speech engine the moment it is complete. "
    "Audio streams back as it is produced, segment by segment. "
    "The first words arrive well before the last ones are written."
)


def _seconds(audio: np.ndarray) -> float:
    return len(audio) / 24_000


def _rms(audio: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(audio, dtype=np.float64))))


def test_engine_identity(onnx_engine: Engine) -> None:
    assert onnx_engine.name == "onnx"
    assert onnx_engine.sample_rate == 24_000
    assert onnx_engine.default_voice == "jf_alpha"
    assert onnx_engine.voices() == ["jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo"]
    assert onnx_engine.language == "en-us"


def test_bad_requests_fail_before_synthesis(onnx_engine: Engine) -> None:
    with pytest.raises(UnknownVoiceError, match="jf_alpha, jf_gongitsune"):
        onnx_engine.check_voice("af_heart")
    with pytest.raises(UnknownVoiceError):
        onnx_engine.plan(SHORT, voice="af_heart", speed=1.0)
    for speed in (0.0, 0.24, 4.01, float("nan"), float("inf")):
        with pytest.raises(InvalidRequestError, match="speed"):
            onnx_engine.plan(SHORT, voice="jf_alpha", speed=speed)
    segment = onnx_engine.plan(SHORT, voice="jf_alpha", speed=1.0)[0]
    with pytest.raises(InvalidRequestError, match="speed"):
        onnx_engine.render(segment, voice="jf_alpha", speed=5.0)
    too_long = Segment(text="x", phonemes="a" * 511, tokens=(43,) * 511)
    with pytest.raises(InvalidRequestError, match="510"):
        onnx_engine.render(too_long, voice="jf_alpha", speed=1.0)


def test_plan_splits_sentences(onnx_engine: Engine) -> None:
    segments = onnx_engine.plan(FOUR_SENTENCES, voice="jf_alpha", speed=1.0)
    assert [segment.text for segment in segments] == [
        "Kokoro Relay makes an agent speak while it is still thinking.",
        "Each sentence goes to the speech engine the moment it is complete.",
        "Audio streams back as it is produced, segment by segment.",
        "The first words arrive well before the last ones are written.",
    ]
    for segment in segments:
        assert 20 < len(segment.tokens) <= 510
        assert len(segment.phonemes) == len(segment.tokens)
    assert onnx_engine.plan("  \n ", voice="jf_alpha", speed=1.0) == []


def test_very_long_text_is_cut_into_segments_of_at_most_510_tokens(onnx_engine: Engine) -> None:
    numbers = " ".join(str(987_654_321 - 1_111 * n) for n in range(28))  # one 'sentence', ~280 chars, >1500 tokens
    prose = " ".join(["the river keeps running past the old mill and nobody stops it"] * 30)
    text = f"{numbers}. {prose}, and then it ends."
    segments = onnx_engine.plan(text, voice="jf_alpha", speed=1.0)
    assert len(segments) > 4
    assert all(0 < len(segment.tokens) <= 510 for segment in segments)
    assert "".join("".join(segment.text.split()) for segment in segments) == "".join(text.split())
    number_segments = [segment for segment in segments if segment.text[0].isdigit()]
    assert len(number_segments) >= 3


def test_short_sentence_sounds_like_speech(onnx_engine: Engine) -> None:
    audio = onnx_engine.synthesize(SHORT, voice="jf_alpha", speed=1.0)
    assert audio.dtype == np.float32
    assert audio.ndim == 1
    assert np.isfinite(audio).all()
    assert 0.3 <= _seconds(audio) <= 3.0
    assert _rms(audio) > 0.01
    assert np.abs(audio).max() < 2.0


def test_same_input_same_bytes(onnx_engine: Engine) -> None:
    segment = onnx_engine.plan(SHORT, voice="jm_kumo", speed=1.0)[0]
    first = onnx_engine.render(segment, voice="jm_kumo", speed=1.0)
    second = onnx_engine.render(segment, voice="jm_kumo", speed=1.0)
    assert first.tobytes() == second.tobytes()
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda _: onnx_engine.render(segment, voice="jm_kumo", speed=1.0), range(2)))
    assert all(result.tobytes() == first.tobytes() for result in results)


def test_speed_changes_duration(onnx_engine: Engine) -> None:
    segment = onnx_engine.plan("Speed changes how long this takes.", voice="jf_alpha", speed=1.0)[0]
    fast = onnx_engine.render(segment, voice="jf_alpha", speed=2.0)
    slow = onnx_engine.render(segment, voice="jf_alpha", speed=0.5)
    assert _seconds(fast) < 0.6 * _seconds(slow)
    assert _rms(fast) > 0.01


def test_blended_voice_speaks(onnx_engine: Engine) -> None:
    audio = onnx_engine.synthesize("A blended voice.", voice="jf_alpha:0.6,jm_kumo:0.4", speed=1.0)
    assert np.isfinite(audio).all()
    assert _rms(audio) > 0.01


def test_official_file_names_are_accepted(onnx_engine: Engine, tmp_path: Path) -> None:
    model = tmp_path / "kokoro-v1.0.onnx"
    model.symlink_to(assemble_int8_model())
    voices = tmp_path / "voices-v1.0.bin"
    with np.load(default_voices_path()) as archive, voices.open("wb") as handle:
        np.savez(handle, af_heart=archive["jf_alpha"], am_adam=archive["jm_kumo"])
    engine = load_engine(EngineConfig(engine="onnx", model_path=model, voices_path=voices, threads=1))
    assert engine.voices() == ["af_heart", "am_adam"]
    assert engine.default_voice == "af_heart"
    ours = engine.synthesize(SHORT, voice="af_heart", speed=1.0)
    reference = onnx_engine.synthesize(SHORT, voice="jf_alpha", speed=1.0)
    assert ours.shape == reference.shape
    np.testing.assert_allclose(ours, reference, atol=2e-3)


def test_input_ids_export_variant(onnx_engine: Engine, tmp_path: Path) -> None:
    graph_model = onnx.load(str(assemble_int8_model()))
    renames = {"tokens": "input_ids", "style": "ref_s"}
    for graph_input in graph_model.graph.input:
        graph_input.name = renames.get(graph_input.name, graph_input.name)
    for node in graph_model.graph.node:
        node.input[:] = [renames.get(name, name) for name in node.input]
    variant = tmp_path / "kokoro-v1.0-input_ids.onnx"
    onnx.save(graph_model, str(variant))

    renamed = OnnxSynthesizer(variant)
    assert renamed.threads == (os.cpu_count() or 1)
    bank = VoiceBank.from_npz(default_voices_path())
    segment = onnx_engine.plan(SHORT, voice="jf_alpha", speed=1.0)[0]
    style = bank.style_for(bank.resolve("jf_alpha"), len(segment.tokens))
    expected = onnx_engine.render(segment, voice="jf_alpha", speed=1.0)
    assert renamed.infer(segment.tokens, style, 1.0).tobytes() == expected.tobytes()


def test_configured_default_voice_and_threads() -> None:
    with pytest.raises(EngineError, match="threads"):
        load_engine(EngineConfig(threads=0))
    with pytest.raises(UnknownVoiceError, match="jm_kumo"):
        load_engine(EngineConfig(default_voice="af_missing", threads=1))
    engine = load_engine(EngineConfig(default_voice="jm_kumo", lang="en-gb", threads=1))
    assert engine.default_voice == "jm_kumo"
    assert engine.language == "en-gb"
    assert "ː" in engine.plan("Bird.", voice="jm_kumo", speed=1.0)[0].phonemes


def test_unusable_model_files(tmp_path: Path) -> None:
    with pytest.raises(ModelFilesError, match="does not exist"):
        OnnxSynthesizer(tmp_path / "absent.onnx")
    garbage = tmp_path / "kokoro-v1.0.onnx"
    garbage.write_bytes(b"\x00" * 64)
    with pytest.raises(ModelFilesError, match="cannot load ONNX model"):
        OnnxSynthesizer(garbage)
