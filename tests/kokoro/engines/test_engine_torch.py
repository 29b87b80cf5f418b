"""The torch engine, loaded through the real loader from a weights directory of tiny random weights.

The config keeps Kokoro's fixed-size decoder (its channel counts are hard-wired in ``kokoro``) but uses a
one-layer ALBERT, one resblock kernel and ``max_dur=2``, so random weights give short audio quickly.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from kokoro.model import KModel

from kokoro_server.engines import Engine, EngineConfig, ModelFilesError, load_engine
from kokoro_server.engines.model_files import default_vocab
from kokoro_server.engines.torch_synth import TorchSynthesizer

pytestmark = pytest.mark.slow

MODULES = ("bert", "bert_encoder", "predictor", "text_encoder", "decoder")


def _tiny_config() -> dict[str, Any]:
    return {
        "vocab": default_vocab(),
        "n_token": 178,
        "hidden_dim": 512,
        "style_dim": 128,
        "n_layer": 1,
        "max_dur": 2,
        "dropout": 0.0,
        "n_mels": 80,
        "text_encoder_kernel_size": 5,
        "plbert": {
            "hidden_size": 32,
            "num_attention_heads": 2,
            "intermediate_size": 64,
            "max_position_embeddings": 512,
            "num_hidden_layers": 1,
            "dropout": 0.0,
        },
        "istftnet": {
            "upsample_rates": [10, 6],
            "upsample_kernel_sizes": [20, 12],
            "upsample_initial_channel": 512,
            "resblock_kernel_sizes": [3],
            "resblock_dilation_sizes": [[1, 3, 5]],
            "gen_istft_n_fft": 20,
            "gen_istft_hop_size": 5,
        },
    }


@pytest.fixture(scope="module")
def weights_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """config.json + kokoro-tiny.pth (random init) + voices/{af_one,am_two}.pt, in the deployed layout."""
    directory = tmp_path_factory.mktemp("tiny-kokoro")
    config = _tiny_config()
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    empty = directory / "empty.checkpoint"
    torch.save({}, empty)
    torch.manual_seed(1234)
    model = KModel(repo_id="hexgrad/Kokoro-82M", config=config, model=str(empty))
    empty.unlink()
    torch.save({name: getattr(model, name).state_dict() for name in MODULES}, directory / "kokoro-tiny.pth")
    voices = directory / "voices"
    voices.mkdir()
    generator = torch.Generator().manual_seed(7)
    for name in ("af_one", "am_two"):
        torch.save(torch.randn(510, 1, 256, generator=generator) * 0.1, voices / f"{name}.pt")
    return directory


@pytest.fixture
def no_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if anything asks the Hugging Face hub for a file."""
    import huggingface_hub  # noqa: PLC0415
    import kokoro.model  # noqa: PLC0415

    def refuse(*args: object, **kwargs: object) -> str:
        pytest.fail(f"hf_hub_download was called: {args} {kwargs}")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(kokoro.model, "hf_hub_download", refuse)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", refuse)


@pytest.mark.usefixtures("no_hub")
def test_loads_through_the_real_loader_and_speaks_float32(weights_dir: Path) -> None:
    engine = load_engine(EngineConfig(engine="torch", weights_dir=weights_dir))
    assert engine.name == "torch"
    assert engine.sample_rate == 24_000
    assert engine.voices() == ["af_one", "am_two"]
    assert engine.default_voice == "af_one"
    audio = engine.synthesize("Hello world. Bye.", voice="af_one:0.5,am_two:0.5", speed=1.0)
    assert audio.dtype == np.float32
    assert audio.ndim == 1
    assert audio.size > 0
    assert np.isfinite(audio).all()


@pytest.mark.usefixtures("no_hub")
def test_weights_are_the_checkpoint_and_device_defaults(weights_dir: Path) -> None:
    synth = TorchSynthesizer(weights_dir)
    expected_device = "cuda" if torch.cuda.is_available() else "cpu"
    assert synth.device.type == expected_device
    assert synth.vocab == default_vocab()
    stored = torch.load(weights_dir / "kokoro-tiny.pth", map_location="cpu", weights_only=True)
    for name in MODULES:
        loaded = getattr(synth.model, name).state_dict()
        for key, tensor in stored[name].items():
            assert torch.equal(loaded[key].cpu(), tensor), f"{name}.{key} was not loaded"


def test_half_converted_checkpoint_is_rejected(weights_dir: Path, tmp_path: Path) -> None:
    shutil.copy(weights_dir / "config.json", tmp_path / "config.json")
    stored = torch.load(weights_dir / "kokoro-tiny.pth", map_location="cpu", weights_only=True)
    dropped = next(iter(stored["predictor"]))
    del stored["predictor"][dropped]
    torch.save(stored, tmp_path / "broken.pth")
    with pytest.raises(ModelFilesError, match=r"does not match the config for 'predictor'.*convert the weights again"):
        TorchSynthesizer(tmp_path, device="cpu")


def test_without_a_weights_dir_the_converted_real_weights_speak(torch_engine: Engine) -> None:
    """No weights directory given: the weights converted from the shipped int8 ONNX, with its five voices."""
    assert torch_engine.voices() == ["jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo"]
    audio = torch_engine.synthesize("Good morning.", voice="jf_alpha", speed=1.0)
    assert audio.dtype == np.float32
    assert np.isfinite(audio).all()
    assert 0.4 < len(audio) / torch_engine.sample_rate < 3.0
    assert float(np.sqrt(np.mean(audio**2))) > 0.01


def test_weights_dir_layout_errors(weights_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ModelFilesError, match=r"config\.json is missing"):
        TorchSynthesizer(tmp_path)
    shutil.copy(weights_dir / "config.json", tmp_path / "config.json")
    with pytest.raises(ModelFilesError, match=r"0 \*\.pth files"):
        TorchSynthesizer(tmp_path)
    (tmp_path / "a.pth").write_bytes(b"")
    (tmp_path / "b.pth").write_bytes(b"")
    with pytest.raises(ModelFilesError, match=r"2 \*\.pth files"):
        TorchSynthesizer(tmp_path)
    (tmp_path / "b.pth").unlink()
    (tmp_path / "a.pth").write_bytes(b"not a checkpoint")
    with pytest.raises(ModelFilesError, match="cannot load Kokoro weights"):
        TorchSynthesizer(tmp_path)
    (tmp_path / "config.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ModelFilesError, match="vocab"):
        TorchSynthesizer(tmp_path)
