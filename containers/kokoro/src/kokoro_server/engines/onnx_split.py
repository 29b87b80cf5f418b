"""Split a Kokoro v1.0 ONNX graph at the decoder's boundary: a front end and a decoder that can run on a window.

Kokoro's front end (PL-BERT, the duration and prosody predictors, the alignment) needs the whole segment; its
iSTFTNet decoder is convolutional and takes ~94 % of the time. The split cuts the graph at the tensors the
decoder reads:

- ``asr``: the aligned text features, ``[1, 512, frames]``;
- ``F0`` and ``N``: the pitch and energy curves, ``[1, 2 * frames]``;
- ``source``: the harmonic sine source after its linear layer and tanh, ``[1, 600 * frames, 1]``, one value per
  audio sample. The source accumulates phase with a ``CumSum`` over the whole segment, so it is computed by the
  front end (it is cheap) and the decoder reads a window of it: a decoder window then has the phase the whole
  segment would have at that point;
- ``style``: the graph input (the decoder slices its own half of it).

The front-end graph outputs those tensors and the predicted durations; the decoder graph maps them to audio.
Run back to back on the whole segment they give the whole graph's audio bit for bit (both are the original nodes;
``tests/kokoro/engines/test_onnx_split.py`` checks it on the real model).

Editing needs the ``onnx`` package (a dependency of the server); a graph without these tensors (another export)
raises :class:`~kokoro_server.engines.onnx_durations.GraphEditError` and the engine runs the whole graph.
"""

from __future__ import annotations

from dataclasses import dataclass

from kokoro_server.engines.onnx_durations import GraphEditError

ASR = "/encoder/MatMul_1_output_0"
F0 = "/encoder/Reshape_output_0"
N = "/encoder/Reshape_1_output_0"
SOURCE = "/decoder/decoder/generator/m_source/l_tanh/Tanh_output_0"
DECODER_INPUTS = (ASR, F0, N, SOURCE)
"""The decoder's inputs besides ``style``, in this order: frames, 2 per frame, 2 per frame, 600 per frame."""


@dataclass(frozen=True, slots=True)
class SplitGraphs:
    """The two serialized graphs and the names their sessions are fed and read by."""

    front: bytes
    """Inputs: the model's own (tokens, style, speed). Outputs: :data:`DECODER_INPUTS`, then the durations."""
    decoder: bytes
    """Inputs: :data:`DECODER_INPUTS` and the style input. Output: the audio."""
    style_input: str
    audio_output: str
    duration_output: str


def split_model(model: bytes, *, duration_output: str) -> SplitGraphs:
    """``model`` (serialized, with ``duration_output`` among its tensors) cut into front end and decoder.

    Raises :class:`GraphEditError` when ``onnx`` is missing or the graph lacks a boundary tensor.
    """
    try:
        import onnx  # noqa: PLC0415 - only needed once, at load
        from onnx.utils import Extractor  # noqa: PLC0415
    except ImportError as exc:
        raise GraphEditError(
            f"the onnx package is not installed ({exc}): install kokoro-server's dependencies"
        ) from exc
    try:
        proto = onnx.load_from_string(model)
    except Exception as exc:  # onnx raises DecodeError and others from protobuf
        raise GraphEditError(f"cannot parse the model ({exc}): this is not an ONNX model") from exc
    graph = proto.graph
    produced = {name for node in graph.node for name in node.output}
    missing = [name for name in (*DECODER_INPUTS, duration_output) if name not in produced]
    if missing:
        raise GraphEditError(
            f"no decoder boundary tensors {missing} in the graph: only the int8 Kokoro-82M export is split; "
            "other exports run whole (no streaming within a segment)"
        )
    inputs = [value.name for value in graph.input]
    style = next((name for name in ("style", "ref_s") if name in inputs), None)
    if style is None or not graph.output:
        raise GraphEditError(f"graph inputs {inputs}: no style input, use a Kokoro v1.0 export")
    audio = graph.output[0].name
    extractor = Extractor(proto)
    front = extractor.extract_model(inputs, [*DECODER_INPUTS, duration_output])
    decoder = extractor.extract_model([*DECODER_INPUTS, style], [audio])
    return SplitGraphs(
        front=front.SerializeToString(),
        decoder=decoder.SerializeToString(),
        style_input=style,
        audio_output=audio,
        duration_output=duration_output,
    )
