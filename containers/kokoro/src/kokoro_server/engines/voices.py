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
from kokoro_server.engines.voice_packs import STYLE_DIM, STYLE_ROWS, is_official, read_archive, read_packs
from relay_core.errors import InvalidFieldError
from relay_core.voice_spec import parse_voice_spec

FloatArray = npt.NDArray[np.float32]


class VoiceBank:
    """A fixed set of named voice packs; resolves a voice name or blend spec to one style table."""

    def __init__(self, packs: Mapping[str, FloatArray]) -> None:
        if not packs:
            raise ModelFilesError("the voice bank is empty: point voices_path at a file with Kokoro voices")
        self._packs: Mapping[str, FloatArray] = MappingProxyType(dict(packs))

    @classmethod
    def from_npz(cls, path: Path) -> VoiceBank:
        """Load an ``.npz`` archive of voices (``voices_ja.npz``, or the official ``voices-v1.0.bin``)."""
        return cls(read_archive(path))

    @classmethod
    def from_pt_dir(cls, path: Path) -> VoiceBank:
        """Load every ``*.pt`` (and ``*.npy``) voice pack in a directory (the model repository's ``voices/``),
        read without unpickling (:func:`kokoro_server.engines.voice_packs.read_pt`)."""
        if not path.is_dir():
            raise ModelFilesError(f"{path} is not a directory of voice packs")
        return cls(read_packs(path))

    @classmethod
    def from_path(cls, path: Path) -> VoiceBank:
        """Load a directory of ``*.pt`` files, one pack, or an ``.npz``-format file, whatever ``path`` is."""
        return cls(read_packs(path))

    def with_packs(self, packs: Mapping[str, FloatArray]) -> VoiceBank:
        """A bank with ``packs`` added (a pack of a name already here replaces it)."""
        return VoiceBank({**self._packs, **packs})

    def official_names(self) -> frozenset[str]:
        """The voices that are official Kokoro v1.0 packs, bit for bit (their table's pinned digest)."""
        return frozenset(name for name, table in self._packs.items() if is_official(name, table))

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
