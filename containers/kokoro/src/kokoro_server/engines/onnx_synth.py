"""The ONNX Runtime synthesizer (CPU): the embedded int8 model, or the official ``kokoro-v1.0.onnx``.

The exports in circulation name their inputs differently (``tokens`` or ``input_ids``; ``style`` or
``ref_s``), so the inputs are identified from the session's own metadata when the model loads. The graph's
predicted token durations are declared as an extra output when the model loads
(:mod:`kokoro_server.engines.onnx_durations`), so every forward pass also says how many frames each token got.

The int8 model is then split into a front end and a decoder (:mod:`kokoro_server.engines.onnx_split`):
:meth:`OnnxSynthesizer.infer_timed` runs both back to back (the whole graph's audio, bit for bit), and
:meth:`OnnxSynthesizer.stream_timed` runs the front end, then the decoder chunk by chunk on context windows
(:mod:`kokoro_server.engines.chunk_plan`). An export that cannot be split runs whole and does not stream.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
from onnxruntime.capi import onnxruntime_pybind11_state as ort_state

from kokoro_server.engines.base import FRAME_SAMPLES, SAMPLE_RATE, Rendered, StreamedRender
from kokoro_server.engines.chunk_plan import ChunkSchedule, decode_windows
from kokoro_server.engines.errors import InferenceError, ModelFilesError
from kokoro_server.engines.onnx_durations import GraphEditError, with_duration_output
from kokoro_server.engines.onnx_split import ASR, DECODER_INPUTS, F0, SOURCE, N, SplitGraphs, split_model

logger = logging.getLogger(__name__)

_TOKEN_NAMES = ("tokens", "input_ids")
_STYLE_NAMES = ("style", "ref_s")
_SPEED_NAMES = ("speed",)
_ORT_ERRORS: tuple[type[Exception], ...] = (
    RuntimeError,
    ValueError,
    *(value for value in vars(ort_state).values() if isinstance(value, type) and issubclass(value, Exception)),
)
"""What ONNX Runtime raises: its native errors derive from Exception directly, so they are listed."""

_NUMPY_TYPES: dict[str, type[np.generic]] = {
    "tensor(float)": np.float32,
    "tensor(double)": np.float64,
    "tensor(int32)": np.int32,
    "tensor(int64)": np.int64,
}


@dataclass(frozen=True)
class _InputNames:
    tokens: str
    style: str
    speed: str
    speed_type: type[np.generic]


def _input_names(session: ort.InferenceSession, path: Path) -> _InputNames:
    inputs = {item.name: item.type for item in session.get_inputs()}

    def pick(candidates: tuple[str, ...]) -> str:
        for name in candidates:
            if name in inputs:
                return name
        raise ModelFilesError(
            f"{path} has inputs {sorted(inputs)}, none of {list(candidates)}: "
            "use a Kokoro v1.0 ONNX export (inputs tokens/input_ids, style, speed)"
        )

    speed = pick(_SPEED_NAMES)
    speed_type = _NUMPY_TYPES.get(inputs[speed])
    if speed_type is None:
        raise ModelFilesError(f"{path}: speed input has unsupported type {inputs[speed]}: use a Kokoro v1.0 export")
    return _InputNames(tokens=pick(_TOKEN_NAMES), style=pick(_STYLE_NAMES), speed=speed, speed_type=speed_type)


class OnnxSynthesizer:
    """Kokoro-82M on ONNX Runtime (CPU). Concurrent :meth:`infer` calls are safe."""

    name = "onnx"
    sample_rate = SAMPLE_RATE

    def __init__(
        self,
        model_path: Path,
        *,
        threads: int | None = None,
        split: bool = True,
        schedule: ChunkSchedule | None = None,
    ) -> None:
        """Load ``model_path``; ``threads`` sets intra-op threads (default: every core). ``split`` cuts the graph
        at the decoder (when it can: :attr:`streams` says) so segments can stream chunk by chunk on ``schedule``."""
        if not model_path.is_file():
            raise ModelFilesError(f"ONNX model {model_path} does not exist: check model_path")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads if threads is not None else (os.cpu_count() or 1)
        options.inter_op_num_threads = 1
        # Token counts vary per segment, so ONNX Runtime's memory-pattern planning (made for fixed shapes) only
        # adds per-shape buffers: without it, 4 concurrent inferences peak ~200 MB lower at the same speed.
        options.enable_mem_pattern = False
        model: str | bytes = str(model_path)
        self.duration_output: str | None = None
        try:
            edited = with_duration_output(model_path.read_bytes())
        except OSError as exc:
            raise ModelFilesError(f"cannot read ONNX model {model_path} ({exc}): check its permissions") from exc
        except GraphEditError as exc:
            logger.warning("%s: no word timings from this model (%s)", model_path, exc)
        else:
            model, self.duration_output = edited.model, edited.duration_output
        graphs: SplitGraphs | None = None
        if split and self.duration_output is not None and isinstance(model, bytes):
            try:
                graphs = split_model(model, duration_output=self.duration_output)
            except GraphEditError as exc:
                logger.warning("%s: segments render whole, without streaming (%s)", model_path, exc)
        self.schedule = schedule or ChunkSchedule()
        self._split = graphs
        self._front: ort.InferenceSession | None = None
        self._decoder: ort.InferenceSession | None = None
        try:
            if graphs is None:
                self._session = ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])
            else:
                self._front = ort.InferenceSession(
                    graphs.front, sess_options=options, providers=["CPUExecutionProvider"]
                )
                self._decoder = ort.InferenceSession(
                    graphs.decoder, sess_options=options, providers=["CPUExecutionProvider"]
                )
                self._session = self._front
        except _ORT_ERRORS as exc:
            raise ModelFilesError(f"cannot load ONNX model {model_path} ({exc}): reinstall or re-download it") from exc
        del model
        self.model_path = model_path
        self.threads = options.intra_op_num_threads
        self._inputs = _input_names(self._session, model_path)
        audio_output = self._session.get_outputs()[0].name
        self._outputs = [audio_output] if self.duration_output is None else [audio_output, self.duration_output]

    @property
    def streams(self) -> bool:
        """Whether the graph was split, so :meth:`stream_timed` streams (else it yields the whole audio once)."""
        return self._split is not None

    def infer(self, tokens: Sequence[int], style: npt.NDArray[np.float32], speed: float) -> npt.NDArray[np.float32]:
        """One forward pass; returns float32 mono audio at 24 kHz."""
        return self.infer_timed(tokens, style, speed).audio

    def infer_timed(self, tokens: Sequence[int], style: npt.NDArray[np.float32], speed: float) -> Rendered:
        """One forward pass: the audio and the frames per token (``None`` if the model hides its durations)."""
        if self._split is not None:
            streamed = self.stream_timed(tokens, style, speed, chunked=False)
            joined = np.concatenate(list(streamed.chunks))
            return Rendered(audio=joined, durations=streamed.durations, frame_samples=FRAME_SAMPLES)
        feeds = {
            self._inputs.tokens: np.array([[0, *tokens, 0]], dtype=np.int64),
            self._inputs.style: np.asarray(style, dtype=np.float32).reshape(1, -1),
            self._inputs.speed: np.array([speed], dtype=self._inputs.speed_type),
        }
        try:
            outputs = self._session.run(self._outputs, feeds)
        except _ORT_ERRORS as exc:
            raise InferenceError(
                f"ONNX inference failed on {len(tokens)} tokens ({exc}): retry or shorten the text"
            ) from exc
        audio: npt.NDArray[np.float32] = np.asarray(outputs[0], dtype=np.float32).reshape(-1)
        durations = None
        if self.duration_output is not None:
            durations = tuple(int(frames) for frames in np.asarray(outputs[1]).reshape(-1).round())
        return Rendered(audio=audio, durations=durations, frame_samples=FRAME_SAMPLES)

    def stream_timed(
        self, tokens: Sequence[int], style: npt.NDArray[np.float32], speed: float, *, chunked: bool = True
    ) -> StreamedRender:
        """Run the front end now; the audio comes as the returned chunks are read (one decoder call per chunk).

        ``chunked=False`` (or a model that was not split) decodes the whole segment in one call.
        """
        if self._split is None or self._front is None:
            rendered = self.infer_timed(tokens, style, speed)
            durations = rendered.durations if rendered.durations is not None else ()
            return StreamedRender(durations=durations, chunks=iter((rendered.audio,)))
        style_row = np.asarray(style, dtype=np.float32).reshape(1, -1)
        feeds = {
            self._inputs.tokens: np.array([[0, *tokens, 0]], dtype=np.int64),
            self._inputs.style: style_row,
            self._inputs.speed: np.array([speed], dtype=self._inputs.speed_type),
        }
        try:
            asr, f0, energy, source, frames = self._front.run([*DECODER_INPUTS, self._split.duration_output], feeds)
        except _ORT_ERRORS as exc:
            raise InferenceError(
                f"ONNX front end failed on {len(tokens)} tokens ({exc}): retry or shorten the text"
            ) from exc
        durations = tuple(int(value) for value in np.asarray(frames).reshape(-1).round())
        return StreamedRender(
            durations=durations,
            chunks=self._decode_chunks(
                asr=asr, f0=f0, energy=energy, source=source, style=style_row, durations=durations, chunked=chunked
            ),
        )

    def _decode_chunks(
        self,
        *,
        asr: npt.NDArray[np.float32],
        f0: npt.NDArray[np.float32],
        energy: npt.NDArray[np.float32],
        source: npt.NDArray[np.float32],
        style: npt.NDArray[np.float32],
        durations: tuple[int, ...],
        chunked: bool,
    ) -> Iterator[npt.NDArray[np.float32]]:
        assert self._decoder is not None
        assert self._split is not None
        frames = int(asr.shape[2])
        lead = durations[0] if durations else 0
        for window in decode_windows(frames, lead_frames=lead, schedule=self.schedule, chunked=chunked):
            lo, hi = window.lo, window.hi
            feeds = {
                ASR: asr[:, :, lo:hi],
                F0: f0[:, 2 * lo : 2 * hi],
                N: energy[:, 2 * lo : 2 * hi],
                SOURCE: source[:, FRAME_SAMPLES * lo : FRAME_SAMPLES * hi],
                self._split.style_input: style,
            }
            try:
                (audio,) = self._decoder.run([self._split.audio_output], feeds)
            except _ORT_ERRORS as exc:
                raise InferenceError(f"ONNX decoder failed on frames {lo}..{hi} ({exc}): retry the request") from exc
            yield window.crop(np.asarray(audio, dtype=np.float32).reshape(-1), FRAME_SAMPLES)
