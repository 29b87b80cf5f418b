"""Convert the int8 Kokoro ONNX into the state dicts and config that ``kokoro.KModel`` loads.

``convert_onnx_to_kmodel`` walks the graph node by node (see ``extract``), fills the few
weights the export leaves out by design, and proves the result: every KModel key is filled,
nothing is NaN, every weight initializer of the ONNX was used, and each sub-module loads
with ``strict=True`` (KModel itself would silently fall back to a lenient load).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import torch

from kokoro_server.convert.config import derive_config, shipped_vocab
from kokoro_server.convert.errors import ConversionError, CoverageError
from kokoro_server.convert.extract import (
    StateCollector,
    extract_conv_integer,
    extract_float_conv,
    extract_float_matmul,
    extract_gather,
    extract_layer_norm,
    extract_lstm,
    extract_matmul_integer,
    extract_skip_layer_norm,
    extract_snake,
)
from kokoro_server.convert.graph import OnnxGraph

REPO_ID = "hexgrad/Kokoro-82M"
COMPONENTS = ("bert", "bert_encoder", "predictor", "text_encoder", "decoder")
# Ops that compute the STFT / inverse STFT; torch recomputes their constants (window, basis).
_STFT_SCOPE = "/decoder/decoder/generator/istft/"
_STFT_NODE = "/decoder/decoder/generator/STFT"

StateDicts = dict[str, dict[str, torch.Tensor]]
Extractor = Callable[[OnnxGraph, onnx.NodeProto, StateCollector], None]


@dataclass(frozen=True)
class CoverageReport:
    """What the conversion filled, from where, and what it checked."""

    keys_total: int
    keys_from_graph: int
    keys_identity: list[str]
    initializers_total: int
    initializers_used: int
    graph_constants: int
    stft_constants: list[str]
    reciprocals_checked: int
    dead_channels: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        """One human line for logs and the CLI."""
        return (
            f"{self.keys_total} keys ({self.keys_from_graph} from the graph, {len(self.keys_identity)} "
            f"identity/zero by design); {self.initializers_used}/{self.initializers_total} initializers used "
            f"({self.graph_constants} graph constants, {len(self.stft_constants)} STFT constants, "
            f"{self.reciprocals_checked} 1/alpha checked); dead weight-norm channels: "
            f"{sum(self.dead_channels.values())}"
        )


@dataclass(frozen=True)
class ConversionResult:
    """State dicts (``torch.load``-able as KModel's ``model``), the config and the coverage report."""

    state_dicts: StateDicts
    config: dict[str, Any]
    report: CoverageReport


def build_skeleton(config: dict[str, Any]) -> torch.nn.Module:
    """An untrained ``kokoro.KModel`` for ``config``: KModel loads each entry of its ``model``
    file, so an empty file yields the freshly initialised modules (no hub access)."""
    from kokoro.model import KModel  # noqa: PLC0415 - heavy optional import, only when converting

    with tempfile.TemporaryDirectory() as tmp:
        empty = Path(tmp) / "empty.pth"
        torch.save({}, empty)
        model: torch.nn.Module = KModel(repo_id=REPO_ID, config=config, model=str(empty))
    return model.eval()


def _dispatch(graph: OnnxGraph, node: onnx.NodeProto) -> Extractor | None:
    if node.name.startswith(_STFT_SCOPE) or node.name == _STFT_NODE:
        return None
    has_init_weight = len(node.input) > 1 and graph.is_initializer(node.input[1])
    match node.op_type:
        case "Gather" if graph.is_initializer(node.input[0]) and graph.initializers[node.input[0]].dtype == np.int8:
            return extract_gather
        case "MatMulInteger":
            return extract_matmul_integer
        case "ConvInteger":
            return extract_conv_integer
        case "DynamicQuantizeLSTM":
            return extract_lstm
        case "LayerNormalization":
            return extract_layer_norm
        case "SkipLayerNormalization":
            return extract_skip_layer_norm
        case "Conv" | "ConvTranspose" if has_init_weight:
            return extract_float_conv
        case "MatMul" if has_init_weight:
            return extract_float_matmul
    return None


def _is_snake_mul(graph: OnnxGraph, node: onnx.NodeProto) -> bool:
    if node.op_type != "Mul" or not any(graph.is_initializer(i) for i in node.input):
        return False
    return any(c.op_type == "Sin" for c in graph.consumers.get(node.output[0], []))


def _is_weight_initializer(name: str, value: np.ndarray[Any, Any]) -> bool:
    if value.dtype in (np.int64, np.int32):
        return False
    if value.dtype in (np.int8, np.uint8):
        return True
    return not name.startswith("/") or value.size >= 16


def _fill_absent(skeleton: torch.nn.Module, out: StateCollector) -> list[str]:
    """InstanceNorm affine weights and the ALBERT pooler are not in the ONNX (unused by its
    computation): identity (1/0) for the norms, zeros for the pooler."""
    filled: list[str] = []
    reference = onnx.NodeProto(name="(absent from the ONNX by design)")
    for name, module in skeleton.named_modules():
        if isinstance(module, torch.nn.InstanceNorm1d) and module.affine:
            for key, value in ((f"{name}.weight", 1.0), (f"{name}.bias", 0.0)):
                if key not in out.values:
                    out.put(key, np.full(module.num_features, value, np.float32), reference)
                    filled.append(key)
        elif name == "bert.pooler":
            for key, tensor in module.state_dict().items():
                full = f"{name}.{key}"
                if full not in out.values:
                    out.put(full, np.zeros(tuple(tensor.shape), np.float32), reference)
                    filled.append(full)
    return filled


def _state_dicts(values: dict[str, np.ndarray[Any, Any]]) -> StateDicts:
    result: StateDicts = {c: {} for c in COMPONENTS}
    for key, value in values.items():
        component, _, sub = key.partition(".")
        result[component][sub] = torch.from_numpy(np.array(value, dtype=np.float32))
    return result


def verify_strict_load(state_dicts: StateDicts, skeleton: torch.nn.Module) -> None:
    """Load every component with ``strict=True`` and reject NaN/inf; raise CoverageError."""
    problems: list[str] = []
    for component in COMPONENTS:
        for key, tensor in state_dicts.get(component, {}).items():
            if not torch.isfinite(tensor).all():
                problems.append(f"{component}.{key} is not finite")
        try:
            getattr(skeleton, component).load_state_dict(state_dicts.get(component, {}), strict=True)
        except RuntimeError as exc:
            problems.append(f"{component}: {exc}")
    if problems:
        raise CoverageError(problems)


def convert_onnx_to_kmodel(onnx_path: Path) -> ConversionResult:
    """Rebuild KModel's weights and config from the int8 ONNX at ``onnx_path``.

    Raises ConversionError (naming the node) when the graph does not have the expected
    structure, CoverageError when the result does not cover KModel exactly.
    """
    return convert_graph(OnnxGraph.load(onnx_path))


def convert_graph(graph: OnnxGraph) -> ConversionResult:
    """``convert_onnx_to_kmodel`` on an already loaded graph (same guarantees and errors)."""
    config = derive_config(graph, shipped_vocab())
    skeleton = build_skeleton(config)
    keys = set(skeleton.state_dict().keys())
    modules = {name for name, _ in skeleton.named_modules()}
    out = StateCollector(keys, modules)

    reciprocals: list[tuple[str, str]] = []
    for node in graph.nodes:
        extractor = _dispatch(graph, node)
        if extractor is not None:
            extractor(graph, node, out)
        elif _is_snake_mul(graph, node):
            reciprocals += extract_snake(graph, node, out)
    for name, alpha_key in reciprocals:
        value = graph.initializers[name].astype(np.float64)
        if not np.allclose(value * out.values[alpha_key], 1.0, rtol=1e-4):
            raise ConversionError(name, f"is not 1/{alpha_key} as the Snake activation requires")
        graph.used.setdefault(name, "1/alpha")
    keys_from_graph = len(out.values)
    identity = _fill_absent(skeleton, out)

    stft: list[str] = []
    for name in graph.initializers:
        readers = graph.consumers.get(name, [])
        if readers and all(r.name.startswith(_STFT_SCOPE) or r.name == _STFT_NODE for r in readers):
            stft.append(name)
            graph.used.setdefault(name, "stft constant")
    problems = [f"missing {k}" for k in sorted(keys - out.values.keys())]
    unused = [n for n, v in graph.initializers.items() if n not in graph.used and _is_weight_initializer(n, v)]
    problems += [f"unused ONNX weight initializer {n!r}" for n in unused]
    if problems:
        raise CoverageError(problems)

    dead = {k: int(np.sum(v.reshape(-1) == 0.0)) for k, v in out.values.items() if k.endswith(".weight_g")}
    state_dicts = _state_dicts(out.values)
    verify_strict_load(state_dicts, skeleton)
    report = CoverageReport(
        keys_total=len(keys),
        keys_from_graph=keys_from_graph,
        keys_identity=identity,
        initializers_total=len(graph.initializers),
        initializers_used=len(graph.used),
        graph_constants=sum(
            1 for n, v in graph.initializers.items() if n not in graph.used and not _is_weight_initializer(n, v)
        ),
        stft_constants=stft,
        reciprocals_checked=len(reciprocals),
        dead_channels={k: n for k, n in dead.items() if n},
    )
    return ConversionResult(state_dicts=state_dicts, config=config, report=report)
