"""How a voice is spelled: a name, or a weighted blend such as ``"jf_alpha:0.7,jm_kumo:0.3"``.

The one place the spelling's rules live: the TTS container resolves a spec against its voice packs with it, and any
client (the ``relay`` CLI first) can refuse a misspelled spec before anything starts. Whether a named voice exists
only the container knows.

Rules: entries are separated by ``,`` or ``+``; an entry is ``name`` or ``name:weight``; a missing weight counts as
1; a weight is a positive finite number; no entry is empty. Weights are returned as written (the container
normalises them to sum to 1).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from relay_core.errors import InvalidFieldError

_SEPARATORS = re.compile(r"[,+]")
EXAMPLE = "'jf_alpha' or 'jf_alpha:0.7,jm_kumo:0.3'"


@dataclass(frozen=True, slots=True)
class VoiceEntry:
    """One voice of a spec and its (unnormalised) weight."""

    name: str
    weight: float


def parse_voice_spec(spec: str) -> tuple[VoiceEntry, ...]:
    """The entries of ``spec``; raises :class:`~relay_core.errors.InvalidFieldError` (field ``voice``) saying how
    to write it when the spelling is wrong."""
    parts = [part.strip() for part in _SEPARATORS.split(spec)]
    if not spec.strip() or any(not part for part in parts):
        raise InvalidFieldError(f"voice spec {spec!r} is empty or has an empty entry: write {EXAMPLE}")
    entries = []
    for part in parts:
        name, colon, weight_text = part.partition(":")
        name, weight_text = name.strip(), weight_text.strip()
        if not name:
            raise InvalidFieldError(f"voice spec {spec!r} has a weight without a voice name: write {EXAMPLE}")
        weight = 1.0
        if colon:
            try:
                weight = float(weight_text)
            except ValueError:
                weight = math.nan
            if not math.isfinite(weight) or weight <= 0:
                raise InvalidFieldError(
                    f"voice weight {weight_text!r} in {spec!r} is not a positive number: write {EXAMPLE}"
                )
        entries.append(VoiceEntry(name, weight))
    return tuple(entries)


__all__ = ["EXAMPLE", "VoiceEntry", "parse_voice_spec"]
