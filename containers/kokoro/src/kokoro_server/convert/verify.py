"""Stage-by-stage agreement between the converted torch KModel and ONNX Runtime on one input.

ONNX Runtime runs the original int8 graph with a few intermediate values exposed as extra
outputs (duration logits, rounded durations, F0 and N curves). Torch runs the same stages
with ONNX Runtime's durations forced as its alignment, so every later stage compares like
with like. SineGen's random initial phase and noise are zeroed on the torch side, because
the ONNX export dropped them; audio is compared by spectra (F0 phase drifts, so sample-wise
correlation is meaningless).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import onnx
import onnxruntime as ort
import torch
from numpy.typing import NDArray

from kokoro_server.convert.converter import REPO_ID
from kokoro_server.convert.store import CHECKPOINT_NAME

DURATION_LOGITS = "/encoder/predictor/duration_proj/linear_layer/Add_output_0"
DURATIONS = "/encoder/Cast_output_0"
F0_CURVE = "/encoder/F0_proj/Conv_output_0"
N_CURVE = "/encoder/N_proj/Conv_output_0"
STAGE_OUTPUTS = (DURATION_LOGITS, DURATIONS, F0_CURVE, N_CURVE)
SAMPLE_TOKENS = (50, 83, 156, 43, 56, 102, 16, 62, 156, 102, 57, 4)
_N_FFT = 1024
_HOP = 256


@dataclass(frozen=True)
class StageAgreement:
    """Measured agreement of torch vs ONNX Runtime for one input (see module doc)."""

    duration_logits_max_abs: float
    duration_logits_corr: float
    durations_equal_fraction: float
    f0_corr: float
    f0_median_abs_hz: float
    n_corr: float
    audio_len_onnx: int
    audio_len_torch: int
    spectral_cosine: float
    log_spectral_distance_db: float

    def format(self) -> str:
        """Multi-line human report."""
        return "\n".join(f"{k}: {v:.4f}" if isinstance(v, float) else f"{k}: {v}" for k, v in vars(self).items())


@contextlib.contextmanager
def zero_source_randomness() -> Iterator[None]:
    """Make SineGen's random initial phase and the source noise zero (as in the ONNX export).

    Swaps ``torch.rand`` and ``torch.randn_like`` for zero-returning versions for the duration
    of the block; meant for single-threaded verification only.
    """

    def zeros(*size: Any, **kwargs: Any) -> torch.Tensor:
        return torch.zeros(*size, **kwargs)

    def zeros_like(tensor: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        return torch.zeros_like(tensor, **kwargs)

    with mock.patch.object(torch, "rand", zeros), mock.patch.object(torch, "randn_like", zeros_like):
        yield


def onnx_stages(onnx_path: Path, tokens: NDArray[np.int64], style: NDArray[np.float32]) -> dict[str, NDArray[Any]]:
    """Run ONNX Runtime with the stage values exposed; returns them plus ``audio``."""
    model = onnx.load(str(onnx_path))
    known = {o.name for o in model.graph.output}
    for name in STAGE_OUTPUTS:
        if name not in known:
            model.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = ["audio", *STAGE_OUTPUTS]
    values = session.run(names, {"tokens": tokens, "style": style, "speed": np.array([1.0], np.float32)})
    return {n: np.asarray(v) for n, v in zip(names, values, strict=True)}


def load_kmodel(weights_dir: Path) -> torch.nn.Module:
    """``kokoro.KModel`` from a weights directory, offline, in eval mode."""
    from kokoro.model import KModel  # noqa: PLC0415 - optional heavy import

    config = json.loads((weights_dir / "config.json").read_text(encoding="utf-8"))
    model: torch.nn.Module = KModel(repo_id=REPO_ID, config=config, model=str(weights_dir / CHECKPOINT_NAME))
    return model.eval()


@torch.no_grad()
def torch_stages(
    model: Any, tokens: NDArray[np.int64], style: NDArray[np.float32], durations: NDArray[Any]
) -> dict[str, NDArray[Any]]:
    """Run KModel's stages with ``durations`` forced as the alignment (as ``forward_with_tokens``)."""
    ids = torch.from_numpy(tokens)
    ref = torch.from_numpy(style)
    lengths = torch.full((1,), ids.shape[-1], dtype=torch.long)
    mask = torch.zeros((1, ids.shape[-1]), dtype=torch.bool)
    bert = model.bert(ids, attention_mask=(~mask).int())
    d_en = model.bert_encoder(bert).transpose(-1, -2)
    s = ref[:, 128:]
    d = model.predictor.text_encoder(d_en, s, lengths, mask)
    x, _ = model.predictor.lstm(d)
    logits = model.predictor.duration_proj(x)
    dur = torch.from_numpy(np.asarray(durations).reshape(-1).astype(np.int64))
    indices = torch.repeat_interleave(torch.arange(ids.shape[1]), dur)
    aln = torch.zeros((ids.shape[1], indices.shape[0]))
    aln[indices, torch.arange(indices.shape[0])] = 1
    aln = aln.unsqueeze(0)
    f0, n = model.predictor.F0Ntrain(d.transpose(-1, -2) @ aln, s)
    asr = model.text_encoder(ids, lengths, mask) @ aln
    with zero_source_randomness():
        audio = model.decoder(asr, f0, n, ref[:, :128]).squeeze()
    pred = torch.round(torch.sigmoid(logits).sum(dim=-1)).clamp(min=1).long()
    return {
        "logits": logits.numpy(),
        "durations": pred.numpy(),
        "f0": f0.numpy(),
        "n": n.numpy(),
        "audio": audio.numpy(),
    }


def _corr(a: NDArray[Any], b: NDArray[Any]) -> float:
    return float(np.corrcoef(a.ravel(), b.ravel())[0, 1])


def magnitude_spectrogram(audio: NDArray[Any]) -> NDArray[np.float64]:
    """|STFT| with a Hann window (n_fft 1024, hop 256), frames × bins."""
    signal = np.asarray(audio, np.float64).ravel()
    window = np.hanning(_N_FFT)
    frames = [signal[i : i + _N_FFT] * window for i in range(0, len(signal) - _N_FFT + 1, _HOP)]
    return np.abs(np.fft.rfft(np.stack(frames), axis=1))


def spectral_similarity(a: NDArray[Any], b: NDArray[Any]) -> tuple[float, float]:
    """(cosine similarity of magnitude spectrograms, log-spectral distance in dB)."""
    length = min(len(a.ravel()), len(b.ravel()))
    sa, sb = magnitude_spectrogram(a.ravel()[:length]), magnitude_spectrogram(b.ravel()[:length])
    cosine = float(np.sum(sa * sb) / (np.linalg.norm(sa) * np.linalg.norm(sb)))
    la, lb = 20 * np.log10(sa + 1e-5), 20 * np.log10(sb + 1e-5)
    lsd = float(np.mean(np.sqrt(np.mean((la - lb) ** 2, axis=1))))
    return cosine, lsd


def compare(onnx_path: Path, model: Any, tokens: NDArray[np.int64], style: NDArray[np.float32]) -> StageAgreement:
    """Measure torch vs ONNX Runtime agreement, stage by stage, for one input."""
    ref = onnx_stages(onnx_path, tokens, style)
    got = torch_stages(model, tokens, style, ref[DURATIONS])
    f0_ref, f0_got = ref[F0_CURVE].ravel(), got["f0"].ravel()
    cosine, lsd = spectral_similarity(ref["audio"], got["audio"])
    return StageAgreement(
        duration_logits_max_abs=float(np.max(np.abs(ref[DURATION_LOGITS] - got["logits"]))),
        duration_logits_corr=_corr(ref[DURATION_LOGITS], got["logits"]),
        durations_equal_fraction=float(np.mean(ref[DURATIONS].ravel() == got["durations"].ravel())),
        f0_corr=_corr(f0_ref, f0_got),
        f0_median_abs_hz=float(np.median(np.abs(f0_ref - f0_got))),
        n_corr=_corr(ref[N_CURVE], got["n"]),
        audio_len_onnx=int(ref["audio"].size),
        audio_len_torch=int(got["audio"].size),
        spectral_cosine=cosine,
        log_spectral_distance_db=lsd,
    )


def sample_input() -> tuple[NDArray[np.int64], NDArray[np.float32]]:
    """A short fixed token sequence and the first shipped voice's style for its length."""
    from kokoro_server.engines.model_files import default_voices_path  # noqa: PLC0415

    tokens = np.array([[0, *SAMPLE_TOKENS, 0]], dtype=np.int64)
    with np.load(default_voices_path(), allow_pickle=False) as archive:
        pack = np.asarray(archive[sorted(archive.files)[0]], np.float32).reshape(510, 256)
    return tokens, pack[len(SAMPLE_TOKENS) - 1 : len(SAMPLE_TOKENS)].copy()


def agreement_report(onnx_path: Path, weights_dir: Path) -> StageAgreement:
    """Load the weights directory and compare it with ONNX Runtime on ``sample_input``."""
    tokens, style = sample_input()
    return compare(onnx_path, load_kmodel(weights_dir), tokens, style)
