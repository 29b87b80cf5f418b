"""Rebuild float weights from the quantized ONNX nodes, one extractor per node kind.

Each extractor reads one node, dequantizes what it holds, converts the layout to PyTorch's
and puts the tensors under the module path of the node's scope. Facts relied on:

- ``(q - zero_point) * scale``; the zero point is taken from the consuming node's inputs
  (the quantizer deduplicated zero-point initializers, so their names mislead), the scale
  from the weight's name (``X_quantized`` → ``X_scale``).
- MatMulInteger weights are ``[in, out]``: transposed for ``nn.Linear``.
- ConvInteger / float Conv weights hold weight norm folded in: ``g = ||W||`` over dims 1..,
  ``v = W``; an output channel quantized to all zeros becomes ``v = 1, g = 0`` (else NaN).
- DynamicQuantizeLSTM: ``W[dir, in, 4H]`` transposed, gates ONNX iofc → torch ifgo,
  ``B`` split into ``bias_ih`` / ``bias_hh``.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import onnx
from numpy.typing import NDArray

from kokoro_server.convert.errors import ConversionError
from kokoro_server.convert.graph import OnnxGraph, dequantize
from kokoro_server.convert.scope import module_path

Array = NDArray[np.float32]
_GATES_ONNX_TO_TORCH = (0, 2, 3, 1)  # ONNX i,o,f,c → torch i,f,g(c),o


class StateCollector:
    """Accumulates ``{full_key: array}``; a key filled twice must get identical values."""

    def __init__(self, keys: Collection[str], modules: Collection[str]) -> None:
        self.keys = keys
        self.modules = modules
        self.values: dict[str, Array] = {}
        self.sources: dict[str, str] = {}

    def put(self, key: str, value: Array, node: onnx.NodeProto) -> None:
        """Store ``value`` under ``key``; fail naming the node on unknown keys or conflicts."""
        if key not in self.keys:
            raise ConversionError(node.name, f"yields {key!r}, which is not a kokoro.KModel weight")
        if key in self.values:
            if self.values[key].shape != value.shape or not np.array_equal(self.values[key], value):
                raise ConversionError(node.name, f"gives {key!r} a value different from node {self.sources[key]!r}")
            return
        self.values[key] = np.ascontiguousarray(value, dtype=np.float32)
        self.sources[key] = node.name

    def path(self, node: onnx.NodeProto) -> str:
        """The module path of ``node``'s scope."""
        return module_path(node.name, self.modules)


def put_conv_weight(out: StateCollector, path: str, weight: Array, node: onnx.NodeProto) -> None:
    """Store a conv weight, split into weight norm ``g``/``v`` when the module uses weight norm."""
    if f"{path}.weight_v" not in out.keys:
        out.put(f"{path}.weight", weight, node)
        return
    axes = tuple(range(1, weight.ndim))
    g = np.sqrt(np.sum(weight.astype(np.float64) ** 2, axis=axes, keepdims=True)).astype(np.float32)
    v = weight.copy()
    dead = g.reshape(-1) == 0.0
    v[dead] = 1.0
    out.put(f"{path}.weight_g", g, node)
    out.put(f"{path}.weight_v", v, node)


def _weight_scale(graph: OnnxGraph, weight_name: str, node: onnx.NodeProto) -> NDArray[np.generic]:
    if not weight_name.endswith("_quantized"):
        raise ConversionError(node.name, f"weight {weight_name!r} does not follow the X_quantized naming")
    return graph.take(weight_name.removesuffix("_quantized") + "_scale", node, "weight scale")


def _float_bias_after(graph: OnnxGraph, node: onnx.NodeProto, size: int) -> Array | None:
    """The 1-D float initializer of ``size`` added to ``node``'s output within a few hops."""
    for nxt in graph.downstream(node, max_depth=3):
        if nxt.op_type not in ("Add", "FastGelu"):
            continue
        for name in nxt.input:
            arr = graph.initializers.get(name)
            if arr is not None and arr.dtype == np.float32 and arr.shape == (size,):
                return graph.take(name, nxt, "bias").astype(np.float32)
    return None


def extract_gather(graph: OnnxGraph, node: onnx.NodeProto, out: StateCollector) -> None:
    """Quantized embedding table: Gather on int8 rows, then DequantizeLinear."""
    table = graph.input(node, 0, "embedding table")
    deq = [c for c in graph.consumers[node.output[0]] if c.op_type == "DequantizeLinear"]
    if len(deq) != 1:
        raise ConversionError(node.name, "is not followed by exactly one DequantizeLinear")
    scale = graph.input(deq[0], 1, "embedding scale")
    zero_point = graph.input(deq[0], 2, "embedding zero point")
    out.put(f"{out.path(node)}.weight", dequantize(table, zero_point, scale, axis=None), node)


def extract_matmul_integer(graph: OnnxGraph, node: onnx.NodeProto, out: StateCollector) -> None:
    """nn.Linear from MatMulInteger: per-column int8 weight ``[in, out]``, bias from the next Add."""
    name = node.input[1]
    q = graph.input(node, 1, "linear weight")
    zero_point = graph.input(node, 3, "linear weight zero point")
    weight = dequantize(q, zero_point, _weight_scale(graph, name, node), axis=1).T
    _put_linear(graph, node, out, weight)


def _put_linear(graph: OnnxGraph, node: onnx.NodeProto, out: StateCollector, weight: Array) -> None:
    """Store an nn.Linear weight ``[out, in]`` and, where the module has one, the float bias added downstream."""
    path = out.path(node)
    out.put(f"{path}.weight", weight, node)
    if f"{path}.bias" in out.keys:
        bias = _float_bias_after(graph, node, weight.shape[0])
        if bias is None:
            raise ConversionError(node.name, f"has no float bias of size {weight.shape[0]} downstream")
        out.put(f"{path}.bias", bias, node)


def _conv_bias(graph: OnnxGraph, node: onnx.NodeProto) -> Array:
    """ConvInteger bias: the float initializer behind the ``*_bias_add`` Add on the output."""
    for add in graph.consumers[node.output[0]]:
        if add.op_type == "Add":
            other = add.input[1] if add.input[0] == node.output[0] else add.input[0]
            name = graph.upstream_initializer(other, add, max_depth=6)
            return graph.take(name, add, "conv bias").astype(np.float32)
    raise ConversionError(node.name, "has no bias Add on its output")


def extract_conv_integer(graph: OnnxGraph, node: onnx.NodeProto, out: StateCollector) -> None:
    """Conv1d from ConvInteger: per-tensor uint8 weight (weight norm folded in) plus bias."""
    name = node.input[1]
    q = graph.input(node, 1, "conv weight")
    zero_point = graph.input(node, 3, "conv weight zero point")
    weight = dequantize(q, zero_point, _weight_scale(graph, name, node), axis=None)
    path = out.path(node)
    put_conv_weight(out, path, weight, node)
    if f"{path}.bias" in out.keys:
        out.put(f"{path}.bias", _conv_bias(graph, node), node)


def extract_float_conv(graph: OnnxGraph, node: onnx.NodeProto, out: StateCollector) -> None:
    """Float Conv / ConvTranspose (kept unquantized): weight norm folded weight plus bias."""
    path = out.path(node)
    weight = graph.input(node, 1, "conv weight").astype(np.float32)
    put_conv_weight(out, path, weight, node)
    if f"{path}.bias" in out.keys:
        out.put(f"{path}.bias", graph.input(node, 2, "conv bias").astype(np.float32), node)


def extract_float_matmul(graph: OnnxGraph, node: onnx.NodeProto, out: StateCollector) -> None:
    """Float MatMul with an initializer weight ``[in, out]`` (nn.Linear kept in float)."""
    _put_linear(graph, node, out, graph.input(node, 1, "linear weight").astype(np.float32).T)


def extract_lstm(graph: OnnxGraph, node: onnx.NodeProto, out: StateCollector) -> None:
    """Bidirectional nn.LSTM from DynamicQuantizeLSTM."""
    path = out.path(node)
    if graph.attribute(node, "direction") != b"bidirectional":
        raise ConversionError(node.name, "is not a bidirectional LSTM")
    hidden = int(graph.attribute(node, "hidden_size"))  # type: ignore[call-overload]
    w = graph.input(node, 1, "LSTM W")
    r = graph.input(node, 2, "LSTM R")
    b = graph.input(node, 3, "LSTM B").astype(np.float32)
    w_scale, w_zp = graph.input(node, 8, "LSTM W scale"), graph.input(node, 9, "LSTM W zero point")
    r_scale, r_zp = graph.input(node, 10, "LSTM R scale"), graph.input(node, 11, "LSTM R zero point")
    for index in (5, 6):  # initial_h / initial_c must be zero states
        if node.input[index] in graph.initializers:
            state = graph.input(node, index, "LSTM initial state")
            if np.any(state != 0):
                raise ConversionError(node.name, "has a non-zero initial state")
    if w.shape[0] != 2 or w.shape[2] != 4 * hidden or b.shape != (2, 8 * hidden):
        raise ConversionError(node.name, f"has unexpected LSTM shapes W{w.shape} B{b.shape}")

    def reorder(mat: Array) -> Array:
        blocks = np.split(mat, 4, axis=0)
        return np.concatenate([blocks[i] for i in _GATES_ONNX_TO_TORCH], axis=0)

    for direction, suffix in ((0, ""), (1, "_reverse")):
        wd = dequantize(w[direction], w_zp[direction], w_scale[direction], axis=None).T
        rd = dequantize(r[direction], r_zp[direction], r_scale[direction], axis=None).T
        out.put(f"{path}.weight_ih_l0{suffix}", reorder(wd), node)
        out.put(f"{path}.weight_hh_l0{suffix}", reorder(rd), node)
        out.put(f"{path}.bias_ih_l0{suffix}", reorder(b[direction, : 4 * hidden]), node)
        out.put(f"{path}.bias_hh_l0{suffix}", reorder(b[direction, 4 * hidden :]), node)


def _put_norm(graph: OnnxGraph, node: onnx.NodeProto, path: str, out: StateCollector, first: int) -> None:
    scale = graph.input(node, first, "norm scale").astype(np.float32)
    shift = graph.input(node, first + 1, "norm bias").astype(np.float32)
    if f"{path}.weight" in out.keys:
        out.put(f"{path}.weight", scale, node)
        out.put(f"{path}.bias", shift, node)
    elif f"{path}.gamma" in out.keys:
        out.put(f"{path}.gamma", scale, node)
        out.put(f"{path}.beta", shift, node)
    elif not (np.all(scale == 1.0) and np.all(shift == 0.0)):
        raise ConversionError(node.name, f"normalizes with learned values but {path!r} has no norm weights")


def extract_layer_norm(graph: OnnxGraph, node: onnx.NodeProto, out: StateCollector) -> None:
    """LayerNormalization: ``weight/bias`` or ``gamma/beta``; AdaLayerNorm's constant 1/0 are checked."""
    _put_norm(graph, node, out.path(node), out, first=1)


def extract_skip_layer_norm(graph: OnnxGraph, node: onnx.NodeProto, out: StateCollector) -> None:
    """Fused (anonymous) SkipLayerNormalization of an ALBERT layer: ``full_layer_layer_norm``.

    Its scope is found through the ``ffn_output`` Add that feeds it.
    """
    producer = graph.producer.get(node.input[0])
    if producer is None:
        raise ConversionError(node.name, "has no producing node for its input")
    ffn_output = out.path(producer)
    if not ffn_output.endswith(".ffn_output"):
        raise ConversionError(node.name, f"is fed by {ffn_output!r}, not an ALBERT ffn_output")
    _put_norm(graph, node, ffn_output.removesuffix("ffn_output") + "full_layer_layer_norm", out, first=2)


def extract_snake(graph: OnnxGraph, node: onnx.NodeProto, out: StateCollector) -> list[tuple[str, str]]:
    """Snake ``alpha`` of an AdaINResBlock1 from ``Mul(x, alpha) → Sin``.

    The index (``alpha1.j`` / ``alpha2.j``) comes from the conv the activation feeds
    (``convs1.j`` / ``convs2.j``). Returns ``[(reciprocal initializer, alpha key)]`` for the
    ``1/alpha`` constants found on the same activation, to be checked by the caller.
    """
    alpha_name = next((i for i in node.input if i in graph.initializers), None)
    if alpha_name is None:
        raise ConversionError(node.name, "is a Snake Mul without an alpha initializer")
    conv = next((n for n in graph.downstream(node, max_depth=12) if n.op_type == "ConvInteger"), None)
    if conv is None:
        raise ConversionError(node.name, "feeds no ConvInteger")
    conv_path = out.path(conv)
    block, _, conv_name = conv_path.rpartition(".convs")
    kind, _, index = conv_name.partition(".")
    key = f"{block}.alpha{kind}.{index}"
    out.put(key, graph.take(alpha_name, node, "snake alpha").astype(np.float32), node)
    reciprocals: list[tuple[str, str]] = []
    for nxt in graph.downstream(node, max_depth=4):
        if nxt.op_type == "Mul":
            reciprocals += [(i, key) for i in nxt.input if i in graph.initializers]
    return reciprocals
