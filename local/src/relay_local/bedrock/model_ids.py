"""The ids of the models behind the local Bedrock stand-in, and the short names the ``relay`` commands take.

Its own module so that a model (``smollm2``) and the registry that loads it (``models``) both name the ids without
importing each other: the registry imports the real model when it is first asked for; the model imports only this.
"""

from __future__ import annotations

from typing import Final

from relay_core.agent import defaults as agent_defaults

ECHO_MODEL_ID: Final = agent_defaults.LOCAL_ECHO_MODEL_ID
SMOLLM2_MODEL_ID: Final = agent_defaults.LOCAL_SMOLLM2_MODEL_ID
MODEL_NAMES: Final = {"echo": ECHO_MODEL_ID, "smollm2": SMOLLM2_MODEL_ID}
"""Short names the ``relay`` commands take (``--model echo|smollm2``) → model ids."""


def resolve_model_name(name: str) -> str:
    """``echo`` / ``smollm2`` → their model ids; a model id is returned as is."""
    return MODEL_NAMES.get(name, name)


__all__ = ["ECHO_MODEL_ID", "MODEL_NAMES", "SMOLLM2_MODEL_ID", "resolve_model_name"]
