"""Text helpers for speech: where sentences and clauses end, and how to cut text to fit a model.

The public entry points are re-exported by :mod:`relay_core.segmenter`, which documents the rules.
"""
