"""Map an ONNX node's scope (``/encoder/F0.0/conv1/Conv_quant``) to a KModel module path.

The export wrapped KModel as ``encoder`` (bert, bert_encoder, text_encoder and the prosody
predictor, whose own scope was inlined) and ``decoder.decoder`` (the iSTFTNet decoder).
Scopes are the reliable handle: initializer names were deduplicated or anonymised
(``onnx::MatMul_6547``) by the exporter and the quantizer.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from kokoro_server.convert.errors import ConversionError

_PASS_SUFFIX = re.compile(r"_\d+$")
_ENCODER_TOP = ("bert", "bert_encoder", "text_encoder", "predictor")


def module_path(node_name: str, modules: Collection[str]) -> str:
    """Return the KModel module path that produced node ``node_name``.

    Drops the op name (last component), the ``_N`` suffixes of unrolled passes over shared
    weights, and doubled scopes (``cnn.0/cnn.0.0`` → ``cnn.0.0``); puts inlined predictor
    scopes back under ``predictor``. Raises ConversionError when the result is not a module.
    """
    parts = [p for p in node_name.split("/") if p]
    if len(parts) < 3:
        raise ConversionError(node_name, "has no module scope")
    parts = [_PASS_SUFFIX.sub("", p) for p in parts[:-1]]
    deduped = [p for i, p in enumerate(parts) if not (i + 1 < len(parts) and parts[i + 1].startswith(p + "."))]
    if deduped[:2] == ["decoder", "decoder"]:
        path = ["decoder", *deduped[2:]]
    elif deduped[0] == "encoder" and len(deduped) > 1:
        rest = deduped[1:]
        path = rest if rest[0] in _ENCODER_TOP else ["predictor", *rest]
    else:
        raise ConversionError(node_name, "is outside the encoder/decoder scopes of the Kokoro export")
    dotted = ".".join(path)
    if dotted not in modules:
        raise ConversionError(node_name, f"maps to {dotted!r}, which is not a kokoro.KModel module")
    return dotted
