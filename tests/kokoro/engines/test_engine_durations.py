"""Per-token durations from both engines: the exact frames-to-samples relation, and ONNX agreeing with torch.

The ONNX graph's duration tensor is exposed by editing the serialized model (no ``onnx`` package at run time);
the wire-level edit is also checked on a small graph built here, independent of Kokoro.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from kokoro_server.engines import FRAME_SAMPLES, Engine, Rendered
from kokoro_server.engines.onnx_durations import GraphEditError, with_duration_output

pytestmark = pytest.mark.slow

TEXT = "It stops at 1,234, then waits."


def _small_graph() -> bytes:
    """x -> Mul(2) -> Round -> Clip(min 1) -> Cast(int64) -> y: the same Round -> Clip shape as Kokoro's predictor."""
    nodes = [
        helper.make_node("Mul", ["x", "two"], ["scaled"], name="mul"),
        helper.make_node("Round", ["scaled"], ["rounded"], name="round"),
        helper.make_node("Clip", ["rounded", "one"], ["clipped"], name="clip"),
        helper.make_node("Cast", ["clipped"], ["y"], name="cast", to=TensorProto.INT64),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [3])],
        initializer=[
            helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]),
            helper.make_tensor("one", TensorProto.FLOAT, [], [1.0]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    serialized: bytes = model.SerializeToString()
    return serialized


def test_duration_output_is_added_to_a_serialized_graph() -> None:
    edited = with_duration_output(_small_graph())
    assert edited.duration_output == "clipped"
    parsed = onnx.load_from_string(edited.model)
    assert [output.name for output in parsed.graph.output] == ["y", "clipped"]
    session = ort.InferenceSession(edited.model, providers=["CPUExecutionProvider"])
    y, clipped = session.run(["y", "clipped"], {"x": np.array([0.1, 1.3, 2.6], dtype=np.float32)})
    assert clipped.tolist() == [1.0, 3.0, 5.0]
    assert y.tolist() == [1, 3, 5]
    again = with_duration_output(edited.model)
    assert again.model == edited.model, "a model that already outputs the tensor is left as it is"


def test_graph_without_durations_or_not_a_model_is_refused() -> None:
    no_round = onnx.load_from_string(_small_graph())
    for node in no_round.graph.node:
        if node.op_type == "Round":
            node.op_type = "Floor"
    with pytest.raises(GraphEditError, match="Round -> Clip"):
        with_duration_output(no_round.SerializeToString())
    for junk in (b"", b"\xff" * 16, b"not an onnx model at all"):
        with pytest.raises(GraphEditError):
            with_duration_output(junk)


def _check_relation(engine: Engine, speed: float) -> Rendered:
    (segment,) = engine.plan(TEXT, voice="jf_alpha", speed=speed)
    rendered = engine.render_timed(segment, voice="jf_alpha", speed=speed)
    assert rendered.durations is not None
    assert len(rendered.durations) == len(segment.tokens) + 2, "one duration per token, both paddings included"
    assert min(rendered.durations) >= 1
    assert rendered.frame_samples == FRAME_SAMPLES
    assert len(rendered.audio) == sum(rendered.durations) * FRAME_SAMPLES
    return rendered


@pytest.fixture(scope="module")
def onnx_normal(onnx_engine: Engine) -> Rendered:
    """TEXT rendered with durations by the ONNX engine at speed 1, its frames-to-samples relation checked: both
    tests read it (the ONNX side of the torch comparison is this same decode)."""
    return _check_relation(onnx_engine, 1.0)


def test_onnx_durations_match_the_audio_exactly(onnx_engine: Engine, onnx_normal: Rendered) -> None:
    normal = onnx_normal
    fast = _check_relation(onnx_engine, 2.0)
    assert normal.durations is not None and fast.durations is not None
    assert sum(fast.durations) < 0.7 * sum(normal.durations), "speed divides the predicted durations"
    (segment,) = onnx_engine.plan(TEXT, voice="jf_alpha", speed=1.0)
    plain = onnx_engine.render(segment, voice="jf_alpha", speed=1.0)
    assert plain.tobytes() == normal.audio.tobytes(), "asking for durations changes nothing in the audio"


def test_torch_durations_match_the_audio_and_the_onnx_engine(
    onnx_engine: Engine, torch_engine: Engine, onnx_normal: Rendered
) -> None:
    torch_durations = np.array(_check_relation(torch_engine, 1.0).durations)
    (segment,) = onnx_engine.plan(TEXT, voice="jf_alpha", speed=1.0)
    (same,) = torch_engine.plan(TEXT, voice="jf_alpha", speed=1.0)
    assert segment.tokens == same.tokens
    assert onnx_normal.durations is not None
    onnx_durations = np.array(onnx_normal.durations)
    # int8 ONNX vs float weights converted from it: the rounding of a few tokens' frame counts may differ by one.
    assert np.abs(onnx_durations - torch_durations).max() <= 1
    drift = np.abs(np.cumsum(onnx_durations) - np.cumsum(torch_durations)).max()
    assert drift <= max(2, 0.02 * onnx_durations.sum()), f"token start times drift by {drift} frames"
