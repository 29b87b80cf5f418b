"""Shared pytest fixtures. Each part keeps its fixtures in its own clearly marked block."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
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
