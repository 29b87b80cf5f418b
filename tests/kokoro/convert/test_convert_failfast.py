"""An unexpected graph structure fails fast, naming the node."""

from __future__ import annotations

import onnx
import pytest

from kokoro_server.convert import ConversionError, CoverageError, convert_graph
from kokoro_server.convert.graph import OnnxGraph
from kokoro_server.engines.model_files import assemble_int8_model

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def model() -> onnx.ModelProto:
    return onnx.load(str(assemble_int8_model()))


def _mutated(model: onnx.ModelProto) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    return copy


def _node(model: onnx.ModelProto, name: str) -> onnx.NodeProto:
    found: onnx.NodeProto = next(n for n in model.graph.node if n.name == name)
    return found


def test_renamed_scope_names_the_node(model: onnx.ModelProto) -> None:
    broken = _mutated(model)
    _node(broken, "/encoder/F0.0/conv1/Conv_quant").name = "/encoder/F0.0/conv9/Conv_quant"
    with pytest.raises(ConversionError, match=r"/encoder/F0\.0/conv9/Conv_quant") as info:
        convert_graph(OnnxGraph(broken))
    assert info.value.node == "/encoder/F0.0/conv9/Conv_quant"
    assert "predictor.F0.0.conv9" in str(info.value)


def test_removed_dequantize_names_the_gather(model: onnx.ModelProto) -> None:
    broken = _mutated(model)
    broken.graph.node.remove(_node(broken, "/encoder/bert/embeddings/word_embeddings/Gather_quant_DequantizeLinear"))
    with pytest.raises(ConversionError) as info:
        convert_graph(OnnxGraph(broken))
    assert info.value.node == "/encoder/bert/embeddings/word_embeddings/Gather_quant"


def test_removed_lstm_is_reported_as_missing_and_unused(model: onnx.ModelProto) -> None:
    broken = _mutated(model)
    broken.graph.node.remove(_node(broken, "/encoder/shared/LSTM_quant"))
    with pytest.raises(CoverageError) as info:
        convert_graph(OnnxGraph(broken))
    problems = "\n".join(info.value.problems)
    assert "missing predictor.shared.weight_ih_l0" in problems
    assert "unused ONNX weight initializer 'onnx::LSTM_6981_quantized'" in problems
