"""Conversation ids: the AgentCore runtime session id of each conversation, which names its user without revealing them.

A conversation's id is ``kokoro-relay-conversation-<user key>-<32 hex>``: :data:`SESSION_ID_PREFIX`, the user's
:func:`user_key` (the first :data:`USER_KEY_CHARS` hex digits of the SHA-256 of the user id: a fixed-length
pseudonym, the same for every conversation of the user, from which the user id cannot be read back), a dash, and a
random UUID's hex. The gateway makes every id with :func:`new_session_id`; the agent keeps each conversation under
``<history prefix>session_<id>/`` (Strands' ``S3SessionManager`` layout), so all of one user's stored conversations
share one key prefix, :func:`user_history_prefix`, by which the erase operation (``relay_functions.ops.erase_user``)
finds them. The user key is fixed-length, so no user's prefix is a prefix of another's.

Ids made before this format (``kokoro-relay-conversation-<32 hex>``) name no user; :func:`session_history_prefix`
still locates such a conversation when its id is known.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Final

from relay_core import limits
from relay_core.agent.defaults import HISTORY_PREFIX
from relay_core.errors import InvalidUserIdError

SESSION_ID_PREFIX: Final = "kokoro-relay-conversation-"
"""What every conversation id the gateway makes begins with."""
USER_KEY_CHARS: Final = 32
"""Hex digits of the user key (128 bits of SHA-256: no two users of one deployment share a key)."""
STRANDS_SESSION_DIR_PREFIX: Final = "session_"
"""Strands' ``S3SessionManager`` keeps session ``<id>`` under ``<prefix>/session_<id>/`` (its ``SESSION_PREFIX``)."""
SESSION_ID_CHARS: Final = len(SESSION_ID_PREFIX) + USER_KEY_CHARS + 1 + 32
"""Length of every id :func:`new_session_id` makes (91): within AgentCore's 33-256 characters."""


def user_key(user_id: str) -> str:
    """The user's fixed-length pseudonym in conversation ids: :data:`USER_KEY_CHARS` lowercase hex digits of the
    SHA-256 of the user id (UTF-8). The same user id gives the same key in every process and deployment."""
    if not user_id:
        raise InvalidUserIdError("the user id is empty: give the user's id (the subject of their token)")
    return hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:USER_KEY_CHARS]


def user_session_id_prefix(user_id: str) -> str:
    """What every conversation id of the user begins with: ``kokoro-relay-conversation-<user key>-``."""
    return f"{SESSION_ID_PREFIX}{user_key(user_id)}-"


def new_session_id(user_id: str) -> str:
    """A fresh conversation id of the user (an AgentCore runtime session id of :data:`SESSION_ID_CHARS` characters:
    letters, digits and dashes)."""
    session_id = user_session_id_prefix(user_id) + uuid.uuid4().hex
    assert len(session_id) == SESSION_ID_CHARS
    assert limits.AGENTCORE_SESSION_ID_MIN_CHARS <= SESSION_ID_CHARS <= limits.AGENTCORE_SESSION_ID_MAX_CHARS
    return session_id


def _history_root(history_prefix: str) -> str:
    """The bucket prefix Strands puts session folders under (it strips the configured prefix's slashes, then
    adds one)."""
    stripped = history_prefix.strip("/")
    return f"{stripped}/{STRANDS_SESSION_DIR_PREFIX}" if stripped else STRANDS_SESSION_DIR_PREFIX


def session_history_prefix(session_id: str, history_prefix: str = HISTORY_PREFIX) -> str:
    """The key prefix of one conversation's stored history: ``<history prefix>session_<id>/``."""
    return f"{_history_root(history_prefix)}{session_id}/"


def user_history_prefix(user_id: str, history_prefix: str = HISTORY_PREFIX) -> str:
    """The key prefix shared by every stored conversation of the user (and by no other user's):
    ``<history prefix>session_kokoro-relay-conversation-<user key>-``."""
    return f"{_history_root(history_prefix)}{user_session_id_prefix(user_id)}"


def gateway_history_prefix(history_prefix: str = HISTORY_PREFIX) -> str:
    """The key prefix of every conversation the gateway made (all users, every id format): what an operation
    erasing users' conversations may be allowed to touch."""
    return f"{_history_root(history_prefix)}{SESSION_ID_PREFIX}"


__all__ = [
    "SESSION_ID_CHARS",
    "SESSION_ID_PREFIX",
    "STRANDS_SESSION_DIR_PREFIX",
    "USER_KEY_CHARS",
    "InvalidUserIdError",
    "gateway_history_prefix",
    "new_session_id",
    "session_history_prefix",
    "user_history_prefix",
    "user_key",
    "user_session_id_prefix",
]
