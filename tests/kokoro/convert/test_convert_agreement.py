"""The converted torch KModel agrees with ONNX Runtime stage by stage (thresholds from measurement,
see docs/torch-weights.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from kokoro_server.convert.verify import (
    StageAgreement,
    compare,
    load_kmodel,
    onnx_stages,
    sample_input,
    zero_source_randomness,
)
from kokoro_server.engines.model_files import assemble_int8_model

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def kmodel(converted_weights_dir: Path) -> Any:
    return load_kmodel(converted_weights_dir)


@pytest.fixture(scope="module")
def agreement(kmodel: Any) -> StageAgreement:
    tokens, style = sample_input()
    return compare(assemble_int8_model(), kmodel, tokens, style)


def test_duration_logits_agree(agreement: StageAgreement) -> None:
    assert agreement.duration_logits_corr > 0.999
    assert agreement.duration_logits_max_abs < 3.0
    assert agreement.durations_equal_fraction >= 0.9


def test_f0_and_n_curves_agree(agreement: StageAgreement) -> None:
    assert agreement.f0_corr > 0.999
    assert agreement.f0_median_abs_hz < 2.0
    assert agreement.n_corr > 0.999


def test_decoder_audio_spectra_agree_under_forced_alignment(agreement: StageAgreement) -> None:
    assert agreement.audio_len_torch == agreement.audio_len_onnx
    assert agreement.spectral_cosine > 0.98
    assert agreement.log_spectral_distance_db < 8.0


def test_free_running_kmodel_speaks_like_onnx(kmodel: Any) -> None:
    tokens, style = sample_input()
    reference = onnx_stages(assemble_int8_model(), tokens, style)["audio"].ravel()
    with zero_source_randomness():
        audio, _ = kmodel.forward_with_tokens(torch.from_numpy(tokens), torch.from_numpy(style), 1.0)
    audio = audio.numpy().ravel()
    assert np.isfinite(audio).all()
    assert abs(audio.size - reference.size) <= 0.1 * reference.size
    assert 0.5 < float(np.sqrt(np.mean(audio**2)) / np.sqrt(np.mean(reference**2))) < 2.0


def test_randomness_is_restored_after_verification() -> None:
    with zero_source_randomness():
        assert torch.rand(4).abs().sum() == 0
    assert torch.rand(64).abs().sum() > 0
