"""Voice banks: loading (.npz, official voices-v1.0.bin, *.pt directories), blends, style rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from kokoro_server.engines import InvalidRequestError, ModelFilesError, UnknownVoiceError
from kokoro_server.engines.model_files import default_voices_path
from kokoro_server.engines.voices import VoiceBank

SHIPPED = ["jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo"]


@pytest.fixture(scope="module")
def bank() -> VoiceBank:
    return VoiceBank.from_npz(default_voices_path())


@pytest.fixture(scope="module")
def raw() -> dict[str, np.ndarray]:
    with np.load(default_voices_path()) as archive:
        return {name: archive[name][:, 0, :] for name in archive.files}


def test_lists_the_shipped_voices(bank: VoiceBank) -> None:
    assert bank.names() == SHIPPED


def test_a_single_voice_is_its_table(bank: VoiceBank, raw: dict[str, np.ndarray]) -> None:
    pack = bank.resolve("jm_kumo")
    assert pack.shape == (510, 256)
    assert pack.dtype == np.float32
    np.testing.assert_array_equal(pack, raw["jm_kumo"])
    assert not pack.flags.writeable


@pytest.mark.parametrize(
    ("spec", "weights"),
    [
        ("jf_alpha:0.7,jm_kumo:0.3", (0.7, 0.3)),
        ("jf_alpha:7, jm_kumo:3", (0.7, 0.3)),
        ("jf_alpha+jm_kumo", (0.5, 0.5)),
        ("jf_alpha:1,jm_kumo", (0.5, 0.5)),
    ],
)
def test_blends_are_normalised_weighted_sums(
    bank: VoiceBank, raw: dict[str, np.ndarray], spec: str, weights: tuple[float, float]
) -> None:
    expected = weights[0] * raw["jf_alpha"].astype(np.float64) + weights[1] * raw["jm_kumo"].astype(np.float64)
    blend = bank.resolve(spec)
    assert blend.shape == (510, 256)
    assert blend.dtype == np.float32
    np.testing.assert_allclose(blend, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("spec", ["af_heart", "jf_alpha:0.5,nobody:0.5", "JF_ALPHA"])
def test_unknown_voice_names_the_available_ones(bank: VoiceBank, spec: str) -> None:
    with pytest.raises(UnknownVoiceError) as caught:
        bank.resolve(spec)
    message = str(caught.value)
    assert all(name in message for name in SHIPPED)
    assert caught.value.available == SHIPPED


@pytest.mark.parametrize(
    "spec",
    ["", "   ", "jf_alpha:-1", "jf_alpha:0", "jf_alpha:abc", "jf_alpha:nan", "jf_alpha:inf", "jf_alpha,,jm_kumo"],
)
def test_bad_specs_are_value_errors(bank: VoiceBank, spec: str) -> None:
    with pytest.raises(InvalidRequestError):
        bank.resolve(spec)
    with pytest.raises(ValueError, match="voice"):
        bank.resolve(spec)


def test_style_row_is_token_count_minus_one_clamped(bank: VoiceBank, raw: dict[str, np.ndarray]) -> None:
    pack = bank.resolve("jf_nezumi")
    for n_tokens, row in [(1, 0), (2, 1), (100, 99), (510, 509), (0, 0), (900, 509)]:
        style = bank.style_for(pack, n_tokens)
        assert style.shape == (1, 256)
        np.testing.assert_array_equal(style[0], raw["jf_nezumi"][row])


def test_official_voices_bin_is_an_npz(tmp_path: Path, raw: dict[str, np.ndarray]) -> None:
    official = tmp_path / "voices-v1.0.bin"
    with official.open("wb") as handle:
        np.savez(handle, af_heart=raw["jf_alpha"][:, None, :], am_adam=raw["jm_kumo"][:, None, :])
    bank = VoiceBank.from_path(official)
    assert bank.names() == ["af_heart", "am_adam"]
    np.testing.assert_array_equal(bank.resolve("am_adam"), raw["jm_kumo"])


def test_pt_directory(tmp_path: Path, raw: dict[str, np.ndarray]) -> None:
    torch.save(torch.from_numpy(raw["jf_alpha"][:, None, :].copy()), tmp_path / "af_one.pt")
    torch.save(torch.from_numpy(raw["jm_kumo"].copy()), tmp_path / "am_two.pt")
    bank = VoiceBank.from_path(tmp_path)
    assert bank.names() == ["af_one", "am_two"]
    np.testing.assert_array_equal(bank.resolve("af_one"), raw["jf_alpha"])
    np.testing.assert_array_equal(bank.resolve("am_two"), raw["jm_kumo"])


def test_bad_voice_files(tmp_path: Path) -> None:
    with pytest.raises(ModelFilesError, match=r"no voice files"):
        VoiceBank.from_pt_dir(tmp_path)
    torch.save(torch.zeros(10, 256), tmp_path / "short.pt")
    with pytest.raises(ModelFilesError, match="shape"):
        VoiceBank.from_pt_dir(tmp_path)
    garbage = tmp_path / "voices.npz"
    garbage.write_bytes(b"not an archive")
    with pytest.raises(ModelFilesError, match="cannot read voices"):
        VoiceBank.from_npz(garbage)
    with pytest.raises(ModelFilesError, match="cannot read voices"):
        VoiceBank.from_npz(tmp_path / "absent.npz")
    nan_file = tmp_path / "nan.npz"
    with nan_file.open("wb") as handle:
        np.savez(handle, bad=np.full((510, 1, 256), np.nan, dtype=np.float32))
    with pytest.raises(ModelFilesError, match="NaN"):
        VoiceBank.from_npz(nan_file)
