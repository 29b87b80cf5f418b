"""The converted state dict covers kokoro.KModel exactly and loads strictly."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kokoro_server.convert import ConversionResult, convert_onnx_to_kmodel
from kokoro_server.convert.converter import COMPONENTS, build_skeleton
from kokoro_server.convert.scope import module_path
from kokoro_server.convert.store import CHECKPOINT_NAME, converted_weights_path, is_weights_dir
from kokoro_server.convert.verify import load_kmodel
from kokoro_server.engines.model_files import assemble_int8_model

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def conversion() -> ConversionResult:
    return convert_onnx_to_kmodel(assemble_int8_model())


@pytest.fixture(scope="module")
def module_names(conversion: ConversionResult) -> set[str]:
    return {name for name, _ in build_skeleton(conversion.config).named_modules()}


def test_config_is_kokoro_82m(conversion: ConversionResult) -> None:
    config = conversion.config
    assert config["n_token"] == 178
    assert config["hidden_dim"] == 512
    assert config["style_dim"] == 128
    assert config["plbert"]["num_hidden_layers"] == 12
    assert config["plbert"]["num_attention_heads"] == 12
    assert config["istftnet"]["upsample_rates"] == [10, 6]
    assert config["istftnet"]["gen_istft_n_fft"] == 20
    assert config["istftnet"]["resblock_kernel_sizes"] == [3, 7, 11]


def test_every_key_filled_and_every_weight_initializer_used(conversion: ConversionResult) -> None:
    report = conversion.report
    skeleton_keys = set(build_skeleton(conversion.config).state_dict())
    converted = {f"{c}.{k}" for c, sd in conversion.state_dicts.items() for k in sd}
    assert converted == skeleton_keys
    assert report.keys_total == len(skeleton_keys) == report.keys_from_graph + len(report.keys_identity)
    # Only InstanceNorm affine weights and the unused ALBERT pooler are filled by design.
    assert all(k.endswith((".norm.weight", ".norm.bias")) or k.startswith("bert.pooler.") for k in report.keys_identity)
    assert report.initializers_used + report.graph_constants == report.initializers_total
    assert report.reciprocals_checked == 48


def test_no_nan_and_dead_channels_are_safe(conversion: ConversionResult) -> None:
    for component in COMPONENTS:
        for key, tensor in conversion.state_dicts[component].items():
            assert torch.isfinite(tensor).all(), key
    assert conversion.report.dead_channels, "the int8 model is known to hold zeroed output channels"
    for full_key in conversion.report.dead_channels:
        component, _, key = full_key.partition(".")
        g = conversion.state_dicts[component][key]
        v = conversion.state_dicts[component][key.replace("weight_g", "weight_v")]
        dead = g.reshape(-1) == 0
        assert torch.all(v[dead] == 1.0)


def test_written_checkpoint_loads_strictly_into_kmodel(converted_weights_dir: Path) -> None:
    assert is_weights_dir(converted_weights_dir)
    assert converted_weights_dir == converted_weights_path()
    checkpoint = torch.load(converted_weights_dir / CHECKPOINT_NAME, map_location="cpu", weights_only=True)
    model = load_kmodel(converted_weights_dir)
    for component in COMPONENTS:
        getattr(model, component).load_state_dict(checkpoint[component], strict=True)
    voice = torch.load(converted_weights_dir / "voices" / "jf_alpha.pt", weights_only=True)
    assert tuple(voice.shape) == (510, 1, 256)


@pytest.mark.parametrize(
    ("node", "path"),
    [
        ("/encoder/F0.0/conv1/Conv_quant", "predictor.F0.0.conv1"),
        ("/encoder/text_encoder/cnn.0/cnn.0.0/Conv_quant", "text_encoder.cnn.0.0"),
        ("/encoder/predictor/text_encoder/lstms.0/LSTM_quant", "predictor.text_encoder.lstms.0"),
        ("/encoder/shared/LSTM_quant", "predictor.shared"),
        (
            "/encoder/bert/encoder/albert_layer_groups.0/albert_layers.0/attention/query_1/MatMul_quant",
            "bert.encoder.albert_layer_groups.0.albert_layers.0.attention.query",
        ),
        (
            "/decoder/decoder/generator/resblocks.4/adain2.2/fc/Gemm_MatMul_quant",
            "decoder.generator.resblocks.4.adain2.2.fc",
        ),
    ],
)
def test_scope_mapping(module_names: set[str], node: str, path: str) -> None:
    assert module_path(node, module_names) == path
