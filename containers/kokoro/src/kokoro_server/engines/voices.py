"""Voice packs: named style tables, and blends of them.

A Kokoro voice is a table of 510 style vectors of 256 floats; the row used for an utterance is picked
by its token count. A :class:`VoiceBank` is immutable once built and safe to share between threads.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from kokoro_server.engines.errors import InvalidRequestError, ModelFilesError, UnknownVoiceError
from relay_core.errors import InvalidFieldError
from relay_core.voice_spec import parse_voice_spec

STYLE_ROWS = 510
STYLE_DIM = 256

FloatArray = npt.NDArray[np.float32]


def _as_pack(name: str, array: npt.NDArray[np.generic], source: Path) -> FloatArray:
    """Validate one voice table and return it as a read-only ``[510, 256]`` float32 array."""
    if array.ndim == 3 and array.shape[1] == 1:
        array = array[:, 0, :]
    if array.ndim != 2 or array.shape != (STYLE_ROWS, STYLE_DIM):
        raise ModelFilesError(
            f"voice {name!r} in {source} has shape {array.shape}, expected ({STYLE_ROWS}, 1, {STYLE_DIM}): "
            "replace the voice file with a Kokoro v1.0 voice pack"
        )
    pack = np.ascontiguousarray(array, dtype=np.float32)
    if not np.isfinite(pack).all():
        raise ModelFilesError(f"voice {name!r} in {source} contains NaN or infinity: replace the voice file")
    pack.setflags(write=False)
    return pack


class VoiceBank:
    """A fixed set of named voice packs; resolves a voice name or blend spec to one style table."""

    def __init__(self, packs: Mapping[str, FloatArray]) -> None:
        if not packs:
            raise ModelFilesError("the voice bank is empty: point voices_path at a file with Kokoro voices")
        self._packs: Mapping[str, FloatArray] = MappingProxyType(dict(packs))

    @classmethod
    def from_npz(cls, path: Path) -> VoiceBank:
        """Load an ``.npz`` archive of voices (``voices_ja.npz``, or the official ``voices-v1.0.bin``)."""
        try:
            with np.load(path, allow_pickle=False) as archive:
                packs = {name: _as_pack(name, archive[name], path) for name in archive.files}
        except (OSError, ValueError) as exc:
            raise ModelFilesError(f"cannot read voices from {path} ({exc}): check voices_path") from exc
        return cls(packs)

    @classmethod
    def from_pt_dir(cls, path: Path) -> VoiceBank:
        """Load every ``*.pt`` tensor in a directory (the layout of the torch weights, ``voices/``)."""
        import torch  # noqa: PLC0415 - torch is an optional extra, needed only for this layout

        files = sorted(path.glob("*.pt"))
        if not files:
            raise ModelFilesError(f"no voice files (*.pt) in {path}: copy the voices/ directory of the weights")
        packs: dict[str, FloatArray] = {}
        for file in files:
            try:
                tensor = torch.load(file, map_location="cpu", weights_only=True)
            except (OSError, RuntimeError, ValueError) as exc:
                raise ModelFilesError(f"cannot read voice {file} ({exc}): replace the file") from exc
            if not isinstance(tensor, torch.Tensor):
                raise ModelFilesError(f"voice {file} holds a {type(tensor).__name__}, not a tensor")
            packs[file.stem] = _as_pack(file.stem, tensor.detach().float().numpy(), file)
        return cls(packs)

    @classmethod
    def from_path(cls, path: Path) -> VoiceBank:
        """Load a directory of ``*.pt`` files or an ``.npz``-format file, whatever ``path`` is."""
        return cls.from_pt_dir(path) if path.is_dir() else cls.from_npz(path)

    def names(self) -> list[str]:
        """The voice names, sorted."""
        return sorted(self._packs)

    def resolve(self, spec: str) -> FloatArray:
        """Return the ``[510, 256]`` style table for a voice name or a weighted blend.

        ``spec`` is ``"jf_alpha"`` or ``"jf_alpha:0.7,jm_kumo:0.3"`` (``+`` also separates; a missing
        weight counts as 1; weights are normalised to sum to 1).

        Raises:
            UnknownVoiceError: a name is not in the bank.
            InvalidRequestError: the spec is empty or a weight is not a positive finite number.
        """
        try:
            entries = parse_voice_spec(spec)
        except InvalidFieldError as exc:
            raise InvalidRequestError(exc.message) from None
        weighted: list[tuple[FloatArray, float]] = []
        for entry in entries:
            pack = self._packs.get(entry.name)
            if pack is None:
                raise UnknownVoiceError(entry.name, self.names())
            weighted.append((pack, entry.weight))
        if len(weighted) == 1:
            return weighted[0][0]
        total = math.fsum(weight for _, weight in weighted)
        blend = np.zeros((STYLE_ROWS, STYLE_DIM), dtype=np.float64)
        for pack, weight in weighted:
            blend += pack.astype(np.float64) * (weight / total)
        result = blend.astype(np.float32)
        result.setflags(write=False)
        return result

    @staticmethod
    def style_for(pack: FloatArray, n_tokens: int) -> FloatArray:
        """The ``[1, 256]`` style row for an utterance of ``n_tokens`` tokens (row ``n - 1``, clamped)."""
        row = min(max(n_tokens - 1, 0), pack.shape[0] - 1)
        return pack[row : row + 1]
