"""Expose Kokoro's predicted token durations as an extra output of a serialized ONNX graph.

Kokoro's duration predictor computes, for every input token (the two padding zeros included), how many
frames of audio it gets: ``clip(round(sum(sigmoid(duration_proj(x))) / speed), min=1)``. The exports only
output ``audio``, but that tensor is an ordinary named value inside the graph; declaring it as a graph output
makes ONNX Runtime return it too, at no extra cost.

The CPU image does not ship the ``onnx`` package, so this module edits the model at the protobuf wire level
(stdlib only): it finds the ``Round`` → ``Clip`` node pair and appends one ``ValueInfoProto`` to the graph's
repeated ``output`` field. Protobuf merges repeated fields that appear anywhere in a message, so appending
bytes to the graph message (and fixing its length prefix) is a valid edit of the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

DURATION_OUTPUT_NAMES = ("duration", "durations", "pred_dur")
"""Graph outputs that already carry durations in some exports; used as they are when present."""

_MODEL_GRAPH = 7
_GRAPH_NODE = 1
_GRAPH_OUTPUT = 12
_NODE_INPUT = 1
_NODE_OUTPUT = 2
_NODE_OP_TYPE = 4
_VALUE_NAME = 1
_VALUE_TYPE = 2
_TYPE_TENSOR = 1
_TENSOR_ELEM_TYPE = 1
_FLOAT = 1

_VARINT, _FIXED64, _LEN, _FIXED32 = 0, 1, 2, 5


class GraphEditError(ValueError):
    """The model bytes are not an ONNX model this module can read, or lack a duration tensor."""


@dataclass(frozen=True, slots=True)
class _Field:
    number: int
    wire_type: int
    start: int
    """Offset of the field's key."""
    value_start: int
    """Offset of the payload (after the length prefix for LEN fields)."""
    end: int


@dataclass(frozen=True, slots=True)
class _Node:
    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


def _varint(data: memoryview, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= len(data):
            raise GraphEditError("truncated varint: the model file is incomplete")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise GraphEditError("varint too long: this is not an ONNX model")


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _fields(data: memoryview, start: int = 0, end: int | None = None) -> Iterator[_Field]:
    pos = start
    stop = len(data) if end is None else end
    while pos < stop:
        key, value_start = _varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if wire_type == _VARINT:
            _, field_end = _varint(data, value_start)
        elif wire_type == _FIXED64:
            field_end = value_start + 8
        elif wire_type == _FIXED32:
            field_end = value_start + 4
        elif wire_type == _LEN:
            length, value_start = _varint(data, value_start)
            field_end = value_start + length
        else:
            raise GraphEditError(f"unsupported protobuf wire type {wire_type}: this is not an ONNX model")
        if field_end > stop:
            raise GraphEditError("a field runs past its message: the model file is incomplete")
        yield _Field(number, wire_type, pos, value_start, field_end)
        pos = field_end


def _text(data: memoryview, field: _Field) -> str:
    try:
        return bytes(data[field.value_start : field.end]).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GraphEditError(f"a name is not UTF-8 ({exc}): this is not an ONNX model") from exc


def _graph_field(data: memoryview) -> _Field:
    for field in _fields(data):
        if field.number == _MODEL_GRAPH and field.wire_type == _LEN:
            return field
    raise GraphEditError("the model has no graph: this is not an ONNX model")


def _nodes_and_outputs(model: bytes, graph: _Field) -> tuple[list[_Node], list[str]]:
    """The graph's ``Round`` and ``Clip`` nodes (only those are decoded: a model has thousands) and its outputs."""
    data = memoryview(model)
    nodes: list[_Node] = []
    outputs: list[str] = []
    for field in _fields(data, graph.value_start, graph.end):
        if field.wire_type != _LEN:
            continue
        if field.number == _GRAPH_NODE:
            if model.find(b"Round", field.value_start, field.end) < 0 and (
                model.find(b"Clip", field.value_start, field.end) < 0
            ):
                continue
            op_type = ""
            inputs: list[str] = []
            node_outputs: list[str] = []
            for part in _fields(data, field.value_start, field.end):
                if part.number == _NODE_OP_TYPE:
                    op_type = _text(data, part)
                elif part.number == _NODE_INPUT:
                    inputs.append(_text(data, part))
                elif part.number == _NODE_OUTPUT:
                    node_outputs.append(_text(data, part))
            nodes.append(_Node(op_type, tuple(inputs), tuple(node_outputs)))
        elif field.number == _GRAPH_OUTPUT:
            for part in _fields(data, field.value_start, field.end):
                if part.number == _VALUE_NAME:
                    outputs.append(_text(data, part))
    return nodes, outputs


def find_duration_tensor(nodes: list[_Node]) -> str:
    """The name of the predicted-duration tensor: the output of the ``Clip`` that takes a ``Round``'s output."""
    rounded = {node.outputs[0] for node in nodes if node.op_type == "Round" and node.outputs}
    for node in nodes:
        if node.op_type == "Clip" and node.inputs and node.inputs[0] in rounded and node.outputs:
            return node.outputs[0]
    raise GraphEditError(
        "no Round -> Clip duration tensor in the graph: use a Kokoro v1.0 export (its duration predictor rounds "
        "and clips the predicted frame counts)"
    )


def _value_info(name: str) -> bytes:
    elem_type = _encode_varint((_TENSOR_ELEM_TYPE << 3) | _VARINT) + _encode_varint(_FLOAT)
    tensor = _encode_varint((_TYPE_TENSOR << 3) | _LEN) + _encode_varint(len(elem_type)) + elem_type
    encoded_name = name.encode("utf-8")
    return (
        _encode_varint((_VALUE_NAME << 3) | _LEN)
        + _encode_varint(len(encoded_name))
        + encoded_name
        + _encode_varint((_VALUE_TYPE << 3) | _LEN)
        + _encode_varint(len(tensor))
        + tensor
    )


@dataclass(frozen=True, slots=True)
class DurationGraph:
    """A model whose outputs include the token durations: the bytes to load and the output's name."""

    model: bytes
    duration_output: str


def with_duration_output(model: bytes) -> DurationGraph:
    """``model`` (a serialized ONNX ModelProto) with the duration tensor declared as a graph output.

    A model that already outputs durations (under one of :data:`DURATION_OUTPUT_NAMES`) comes back unchanged.
    Raises :class:`GraphEditError` when the bytes are not a model or have no duration tensor.
    """
    data = memoryview(model)
    graph = _graph_field(data)
    nodes, outputs = _nodes_and_outputs(model, graph)
    for name in outputs:
        if name in DURATION_OUTPUT_NAMES:
            return DurationGraph(model=model, duration_output=name)
    name = find_duration_tensor(nodes)
    if name in outputs:
        return DurationGraph(model=model, duration_output=name)
    output = _value_info(name)
    added = _encode_varint((_GRAPH_OUTPUT << 3) | _LEN) + _encode_varint(len(output)) + output
    payload_length = graph.end - graph.value_start + len(added)
    header = _encode_varint((_MODEL_GRAPH << 3) | _LEN) + _encode_varint(payload_length)
    edited = b"".join((data[: graph.start], header, data[graph.value_start : graph.end], added, data[graph.end :]))
    return DurationGraph(model=edited, duration_output=name)
