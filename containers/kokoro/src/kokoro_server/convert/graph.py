"""A read-only index over an ONNX graph: initializers, producers, consumers, and usage tracking.

The converter walks the graph through this index; every initializer it reads is recorded,
so the coverage check can prove that no weight in the file was left behind.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
from numpy.typing import NDArray
from onnx import numpy_helper

from kokoro_server.convert.errors import ConversionError


class OnnxGraph:
    """Initializers as numpy arrays plus producer/consumer maps of one ONNX graph."""

    def __init__(self, model: onnx.ModelProto) -> None:
        graph = model.graph
        self.nodes: list[onnx.NodeProto] = list(graph.node)
        self.initializers: dict[str, NDArray[np.generic]] = {
            init.name: numpy_helper.to_array(init) for init in graph.initializer
        }
        self.producer: dict[str, onnx.NodeProto] = {}
        self.consumers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
        for node in self.nodes:
            for out in node.output:
                self.producer[out] = node
            for inp in node.input:
                if inp:
                    self.consumers[inp].append(node)
        self.used: dict[str, str] = {}

    @classmethod
    def load(cls, path: Path) -> OnnxGraph:
        """Load the graph at ``path`` (weights included)."""
        return cls(onnx.load(str(path)))

    def nodes_of(self, op_type: str) -> Iterator[onnx.NodeProto]:
        """Every node of ``op_type``, in graph order."""
        return (node for node in self.nodes if node.op_type == op_type)

    def is_initializer(self, name: str) -> bool:
        """Whether ``name`` is an initializer (a stored tensor, not a computed value)."""
        return name in self.initializers

    def take(self, name: str, node: onnx.NodeProto, role: str) -> NDArray[np.generic]:
        """Return initializer ``name`` read by ``node`` and record it as used for ``role``."""
        if name not in self.initializers:
            raise ConversionError(node.name, f"input {name!r} ({role}) is not an initializer")
        self.used.setdefault(name, role)
        return self.initializers[name]

    def input(self, node: onnx.NodeProto, index: int, role: str) -> NDArray[np.generic]:
        """Return the initializer at input ``index`` of ``node``, recording it as used."""
        if index >= len(node.input) or not node.input[index]:
            raise ConversionError(node.name, f"has no input {index} ({role})")
        return self.take(node.input[index], node, role)

    def attribute(self, node: onnx.NodeProto, name: str) -> object:
        """Return attribute ``name`` of ``node``; fail naming the node when absent."""
        for attr in node.attribute:
            if attr.name == name:
                return onnx.helper.get_attribute_value(attr)
        raise ConversionError(node.name, f"has no attribute {name!r}")

    def downstream(self, node: onnx.NodeProto, max_depth: int) -> Iterator[onnx.NodeProto]:
        """Nodes reachable from ``node``'s outputs, breadth first, up to ``max_depth`` hops."""
        frontier = [node]
        seen = {node.name}
        for _ in range(max_depth):
            following: list[onnx.NodeProto] = []
            for current in frontier:
                for out in current.output:
                    for nxt in self.consumers.get(out, []):
                        if nxt.name not in seen:
                            seen.add(nxt.name)
                            following.append(nxt)
                            yield nxt
            frontier = following

    def upstream_initializer(self, value: str, node: onnx.NodeProto, max_depth: int) -> str:
        """Follow ``value`` back through single-path producers to the float initializer it comes from."""
        current = value
        for _ in range(max_depth):
            if current in self.initializers:
                return current
            producer = self.producer.get(current)
            if producer is None:
                break
            current = producer.input[0]
        if current in self.initializers:
            return current
        raise ConversionError(node.name, f"cannot trace {value!r} back to an initializer")


def dequantize(
    q: NDArray[np.generic], zero_point: NDArray[np.generic], scale: NDArray[np.generic], axis: int | None
) -> NDArray[np.float32]:
    """``(q - zero_point) * scale``, per tensor (``axis`` None) or per slice along ``axis``."""
    qf = q.astype(np.float64)
    zp = np.asarray(zero_point).astype(np.float64)
    sc = np.asarray(scale).astype(np.float64)
    if axis is not None and zp.ndim == 1:
        shape = [1] * q.ndim
        shape[axis] = -1
        zp = zp.reshape(shape)
        sc = sc.reshape(shape)
    return ((qf - zp) * sc).astype(np.float32)
