"""Shared pytest fixtures. Each part keeps its fixtures in its own clearly marked block."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pathlib import Path

    from kokoro_server.engines import Engine


# ---------------------------------------------------------------------------------------------------------
# Kokoro engines (owner: kokoro engines; used by tests/kokoro/engines and the kokoro server tests)
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def onnx_engine() -> Engine:
    """The real Kokoro-82M int8 ONNX engine (shipped model and voices, en-us G2P), loaded once per session.

    The model is reassembled into the default cache ($KOKORO_RELAY_CACHE or ~/.cache/kokoro-relay) on
    first use. Default voice: jf_alpha.
    """
    from kokoro_server.engines import EngineConfig, load_engine  # noqa: PLC0415 - keep other parts' imports light

    return load_engine(EngineConfig(engine="onnx"))


# --------------------------------------------- end Kokoro engines ----------------------------------------



# ---------------------------------------------------------------------------------------------------------
# Converted torch weights (owner: kokoro convert; used by tests/kokoro/convert and torch-engine tests)
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def converted_weights_dir() -> Path:
    """A KModel weights directory (config.json, kokoro-v1_0.pth, voices/*.pt) converted from the shipped
    int8 ONNX, built once into the default cache ($KOKORO_RELAY_CACHE or ~/.cache/kokoro-relay) and reused."""
    from kokoro_server.convert import ensure_converted_weights  # noqa: PLC0415 - needs the torch extra

    return ensure_converted_weights()


# --------------------------------------------- end converted torch weights -------------------------------
