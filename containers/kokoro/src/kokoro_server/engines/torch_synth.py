"""The PyTorch synthesizer (the GPU production path): the ``kokoro`` package's ``KModel``.

Weights come from a local directory only (``config.json``, one ``*.pth``, ``voices/*.pt``); the
config and checkpoint paths are always passed explicitly, so ``KModel`` never reaches the Hugging Face
hub. ``KModel`` quietly skips checkpoint entries it cannot load strictly, so the checkpoint is checked
against the model's own parameter names first: a half-converted checkpoint fails at load time.

The model runs split at its decoder, as the ONNX engine does (:mod:`kokoro_server.engines.onnx_split`):
:func:`front_end` is ``KModel.forward_with_tokens`` up to the decoder's inputs (the aligned text features, the F0
and energy curves) plus the generator's harmonic sine source for the whole segment (its phase is a cumulative sum
over the segment, and its noise is drawn once, so every decoder window reads the values the whole segment has);
:func:`decode` is ``Decoder.forward`` with that source given instead of computed. Back to back on the whole
segment they are ``forward_with_tokens`` operation for operation: with the same random state, the same audio
bit for bit (``tests/kokoro/engines/test_torch_split.py``). :meth:`TorchSynthesizer.stream_timed` decodes the
segment chunk by chunk on context windows (:mod:`kokoro_server.engines.chunk_plan`), cropping the margins.
"""

from __future__ import annotations

import json
import math
import pickle
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from kokoro.model import KModel

from kokoro_server.engines.base import SAMPLE_RATE, Rendered, StreamedRender
from kokoro_server.engines.chunk_plan import ChunkSchedule, decode_windows
from kokoro_server.engines.errors import InferenceError, ModelFilesError

REPO_ID = "hexgrad/Kokoro-82M"
"""Only a label for ``KModel`` (it selects nothing, since config and weights are local files)."""

_MODULES = ("bert", "bert_encoder", "predictor", "text_encoder", "decoder")


def weights_files(weights_dir: Path) -> tuple[Path, Path]:
    """The ``config.json`` and the single ``*.pth`` checkpoint in ``weights_dir``."""
    config = weights_dir / "config.json"
    checkpoints = sorted(weights_dir.glob("*.pth"))
    if not config.is_file():
        raise ModelFilesError(f"{config} is missing: weights_dir must hold config.json, one *.pth and voices/")
    if len(checkpoints) != 1:
        raise ModelFilesError(
            f"{weights_dir} holds {len(checkpoints)} *.pth files, expected exactly one: remove the extra ones"
        )
    return config, checkpoints[0]


def read_config(path: Path) -> dict[str, Any]:
    """The model config (hidden sizes, vocabulary, ...) from ``config.json``."""
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ModelFilesError(f"cannot read {path} ({exc}): copy a Kokoro config.json there") from exc
    if not isinstance(config, dict) or not isinstance(config.get("vocab"), dict):
        raise ModelFilesError(f"{path} has no 'vocab' mapping: copy a Kokoro config.json there")
    return config


def frame_samples(config: Mapping[str, Any]) -> int:
    """Audio samples per duration frame for ``config``: the decoder's 2x upsampling times the iSTFT
    generator's ``prod(upsample_rates) * gen_istft_hop_size`` (600 for Kokoro-82M)."""
    istft = config.get("istftnet", {})
    try:
        product = math.prod(int(rate) for rate in istft["upsample_rates"]) * int(istft["gen_istft_hop_size"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFilesError(
            f"config.json has no usable istftnet upsample_rates/gen_istft_hop_size ({exc}): use a Kokoro config.json"
        ) from exc
    return 2 * product


def _check_checkpoint(model: torch.nn.Module, checkpoint: Mapping[str, Any], path: Path) -> None:
    missing_modules = [name for name in _MODULES if name not in checkpoint]
    if missing_modules:
        raise ModelFilesError(f"checkpoint {path} lacks {missing_modules}: convert the weights again")
    for name in _MODULES:
        expected = set(getattr(model, name).state_dict())
        stored = {key.removeprefix("module.") for key in checkpoint[name]}
        if expected != stored:
            absent = sorted(expected - stored)[:3]
            extra = sorted(stored - expected)[:3]
            raise ModelFilesError(
                f"checkpoint {path} does not match the config for {name!r} "
                f"(missing {absent}, unexpected {extra}): convert the weights again with this config"
            )


@dataclass(frozen=True, slots=True)
class FrontEnd:
    """One segment's decoder inputs, for the whole segment (``frames`` = ``sum(durations)``)."""

    asr: torch.Tensor
    """The aligned text features, ``[1, 512, frames]``."""
    f0: torch.Tensor
    """The pitch curve, ``[1, 2 * frames]``."""
    energy: torch.Tensor
    """The energy curve, ``[1, 2 * frames]``."""
    source: torch.Tensor
    """The harmonic sine source after the source module's linear layer and tanh, ``[1, frame_samples * frames, 1]``."""
    style: torch.Tensor
    """The decoder's half of the style row, ``[1, 128]``."""
    durations: tuple[int, ...]
    """Frames per input token, the two padding tokens included."""

    @property
    def frames(self) -> int:
        return int(self.asr.shape[2])


def front_end(model: KModel, input_ids: torch.Tensor, ref_s: torch.Tensor, speed: float) -> FrontEnd:
    """``KModel.forward_with_tokens`` up to the decoder, plus the generator's sine source for the whole segment.

    Draws from torch's global random generator exactly what ``forward_with_tokens`` draws (the source's initial
    harmonic phases and its noise, in the same order), so with the same random state the source is the same."""
    length = int(input_ids.shape[-1])
    input_lengths = torch.full((input_ids.shape[0],), length, device=input_ids.device, dtype=torch.long)
    positions = torch.arange(length).unsqueeze(0).expand(input_lengths.shape[0], -1).type_as(input_lengths)
    text_mask = torch.gt(positions + 1, input_lengths.unsqueeze(1)).to(model.device)
    bert_dur = model.bert(input_ids, attention_mask=(~text_mask).int())
    d_en = model.bert_encoder(bert_dur).transpose(-1, -2)
    s = ref_s[:, 128:]
    d = model.predictor.text_encoder(d_en, s, input_lengths, text_mask)
    x, _ = model.predictor.lstm(d)
    duration = model.predictor.duration_proj(x)
    duration = torch.sigmoid(duration).sum(dim=-1) / speed
    pred_dur = torch.round(duration).clamp(min=1).long().squeeze()
    indices = torch.repeat_interleave(torch.arange(input_ids.shape[1], device=model.device), pred_dur)
    pred_aln_trg = torch.zeros((input_ids.shape[1], indices.shape[0]), device=model.device)
    pred_aln_trg[indices, torch.arange(indices.shape[0])] = 1
    pred_aln_trg = pred_aln_trg.unsqueeze(0).to(model.device)
    en = d.transpose(-1, -2) @ pred_aln_trg
    f0, energy = model.predictor.F0Ntrain(en, s)
    t_en = model.text_encoder(input_ids, input_lengths, text_mask)
    asr = t_en @ pred_aln_trg
    generator = model.decoder.generator
    upsampled = generator.f0_upsamp(f0[:, None]).transpose(1, 2)
    source, _noise, _uv = generator.m_source(upsampled)
    durations = tuple(int(frames) for frames in pred_dur.detach().cpu().reshape(-1).tolist())
    return FrontEnd(asr=asr, f0=f0, energy=energy, source=source, style=ref_s[:, :128], durations=durations)


def decode(
    model: KModel,
    *,
    asr: torch.Tensor,
    f0: torch.Tensor,
    energy: torch.Tensor,
    source: torch.Tensor,
    style: torch.Tensor,
) -> torch.Tensor:
    """``Decoder.forward`` on ``asr`` (``[1, 512, w]``), ``f0``/``energy`` (``[1, 2w]``) and the matching window of
    the sine ``source`` (``[1, frame_samples * w, 1]``) instead of a source computed from ``f0``: the audio of
    those ``w`` frames, ``frame_samples * w`` samples, flat."""
    decoder = model.decoder
    f0_down = decoder.F0_conv(f0.unsqueeze(1))
    energy_down = decoder.N_conv(energy.unsqueeze(1))
    x = torch.cat([asr, f0_down, energy_down], dim=1)
    x = decoder.encode(x, style)
    asr_res = decoder.asr_res(asr)
    res = True
    for block in decoder.decode:
        if res:
            x = torch.cat([x, asr_res, f0_down, energy_down], dim=1)
        x = block(x, style)
        if block.upsample_type != "none":
            res = False
    generator = decoder.generator
    har_source = source.transpose(1, 2).squeeze(1)
    har_spec, har_phase = generator.stft.transform(har_source)
    har = torch.cat([har_spec, har_phase], dim=1)
    for i in range(generator.num_upsamples):
        x = torch.nn.functional.leaky_relu(x, negative_slope=0.1)
        x_source = generator.noise_convs[i](har)
        x_source = generator.noise_res[i](x_source, style)
        x = generator.ups[i](x)
        if i == generator.num_upsamples - 1:
            x = generator.reflection_pad(x)
        x = x + x_source
        xs: torch.Tensor | None = None
        for j in range(generator.num_kernels):
            block_out = generator.resblocks[i * generator.num_kernels + j](x, style)
            xs = block_out if xs is None else xs + block_out
        assert xs is not None
        x = xs / generator.num_kernels
    x = torch.nn.functional.leaky_relu(x)
    x = generator.conv_post(x)
    spec = torch.exp(x[:, : generator.post_n_fft // 2 + 1, :])
    phase = torch.sin(x[:, generator.post_n_fft // 2 + 1 :, :])
    audio: torch.Tensor = generator.stft.inverse(spec, phase)
    return audio.reshape(-1)


class TorchSynthesizer:
    """Kokoro-82M on PyTorch (CUDA when available, else CPU). Concurrent :meth:`infer` calls are safe.

    Unlike the ONNX export, ``KModel``'s vocoder draws random excitation noise and phase on every
    call, so two renders of the same segment differ slightly (same length, same speech); a streamed segment draws
    them once, in its front end, so its chunks share them.
    """

    name = "torch"
    sample_rate = SAMPLE_RATE

    def __init__(
        self,
        weights_dir: Path,
        *,
        device: str | None = None,
        threads: int | None = None,
        schedule: ChunkSchedule | None = None,
    ) -> None:
        """Load ``config.json`` and the ``*.pth`` in ``weights_dir`` onto ``device`` (default: cuda if present);
        :meth:`stream_timed` decodes chunk by chunk on ``schedule`` (default: :class:`ChunkSchedule`'s)."""
        config_path, checkpoint_path = weights_files(weights_dir)
        config = read_config(config_path)
        if threads is not None:
            torch.set_num_threads(threads)
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        try:
            checkpoint = torch.load(checkpoint_path, map_location="cpu", weights_only=True)
            model = KModel(repo_id=REPO_ID, config=config, model=str(checkpoint_path))
            if not isinstance(checkpoint, Mapping):
                raise ModelFilesError(f"checkpoint {checkpoint_path} is not a dict of module state dicts")
            _check_checkpoint(model, checkpoint, checkpoint_path)
            self.model: KModel = model.eval().to(self.device)
        except (
            OSError,
            EOFError,
            pickle.UnpicklingError,
            RuntimeError,
            KeyError,
            ValueError,
            TypeError,
            AssertionError,
        ) as exc:
            raise ModelFilesError(
                f"cannot load Kokoro weights from {weights_dir} ({type(exc).__name__}: {exc}): "
                "check that config.json and the checkpoint belong together"
            ) from exc
        self.vocab: dict[str, int] = dict(config["vocab"])
        self.frame_samples = frame_samples(config)
        self.weights_dir = weights_dir
        self.schedule = schedule or ChunkSchedule()

    @property
    def streams(self) -> bool:
        """Always: :meth:`stream_timed` decodes chunk by chunk (``KModel`` is split in Python, not by a graph edit)."""
        return True

    def infer(self, tokens: Sequence[int], style: npt.NDArray[np.float32], speed: float) -> npt.NDArray[np.float32]:
        """One forward pass; returns float32 mono audio at 24 kHz."""
        return self.infer_timed(tokens, style, speed).audio

    def infer_timed(self, tokens: Sequence[int], style: npt.NDArray[np.float32], speed: float) -> Rendered:
        """One forward pass: the audio and ``KModel``'s predicted frames per token (padding included).

        Front end then the decoder on the whole segment: ``forward_with_tokens``'s operations, in its order."""
        streamed = self.stream_timed(tokens, style, speed, chunked=False)
        audio = np.concatenate(list(streamed.chunks))
        return Rendered(audio=audio, durations=streamed.durations, frame_samples=self.frame_samples)

    def stream_timed(
        self, tokens: Sequence[int], style: npt.NDArray[np.float32], speed: float, *, chunked: bool = True
    ) -> StreamedRender:
        """Run the front end now; the audio comes as the returned chunks are read (one decoder call per chunk).

        The chunks follow :attr:`schedule` (``chunked=False``: the whole segment in one call); each is decoded on
        its context window and the margins' audio cropped. Concatenated they are ``sum(durations) * frame_samples``
        samples."""
        front = self.front_end(tokens, style, speed)
        return StreamedRender(
            durations=front.durations,
            chunks=self.decode_chunks(front, chunked=chunked),
            frame_samples=self.frame_samples,
        )

    def front_end(self, tokens: Sequence[int], style: npt.NDArray[np.float32], speed: float) -> FrontEnd:
        """The segment's decoder inputs and durations (:func:`front_end`) on this synthesizer's device."""
        input_ids = torch.tensor([[0, *tokens, 0]], dtype=torch.long, device=self.device)
        ref_s = torch.from_numpy(np.array(style, dtype=np.float32).reshape(1, -1)).to(self.device)
        try:
            with torch.inference_mode():
                return front_end(self.model, input_ids, ref_s, speed)
        except RuntimeError as exc:
            raise InferenceError(
                f"torch front end failed on {len(tokens)} tokens ({exc}): retry or shorten the text"
            ) from exc

    def decode_chunks(self, front: FrontEnd, *, chunked: bool = True) -> Iterator[npt.NDArray[np.float32]]:
        """``front``'s audio, one decoder call per chunk of :attr:`schedule` (or one for the whole segment)."""
        per_frame = self.frame_samples
        lead = front.durations[0] if front.durations else 0
        for window in decode_windows(front.frames, lead_frames=lead, schedule=self.schedule, chunked=chunked):
            lo, hi = window.lo, window.hi
            try:
                with torch.inference_mode():
                    audio = decode(
                        self.model,
                        asr=front.asr[:, :, lo:hi],
                        f0=front.f0[:, 2 * lo : 2 * hi],
                        energy=front.energy[:, 2 * lo : 2 * hi],
                        source=front.source[:, per_frame * lo : per_frame * hi],
                        style=front.style,
                    )
            except RuntimeError as exc:
                raise InferenceError(f"torch decoder failed on frames {lo}..{hi} ({exc}): retry the request") from exc
            kept = audio[per_frame * window.keep_start : per_frame * window.keep_end]  # cropped on the device
            yield window.with_silence(kept.detach().float().cpu().numpy().astype(np.float32), per_frame)
