"""Conversation ids name their user by a fixed-length key (never the user id), within AgentCore's bounds, and every
conversation of a user shares one history prefix that no other user's shares."""

from __future__ import annotations

import hashlib
import re

import pytest

from relay_core import limits
from relay_core.agent.conversation_ids import (
    SESSION_ID_CHARS,
    SESSION_ID_PREFIX,
    USER_KEY_CHARS,
    InvalidUserIdError,
    gateway_history_prefix,
    new_session_id,
    session_history_prefix,
    user_history_prefix,
    user_key,
    user_session_id_prefix,
)

AGENTCORE_SESSION_ID = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_-]*$")
"""The characters AgentCore's ``runtimeSessionId`` accepts (letters, digits, ``-`` and ``_``)."""


def test_an_id_carries_the_users_key_not_the_user_id() -> None:
    user = "alice@example.com"
    session_id = new_session_id(user)
    assert user not in session_id and "alice" not in session_id
    assert session_id.startswith(f"{SESSION_ID_PREFIX}{user_key(user)}-")
    assert user_key(user) == hashlib.sha256(user.encode()).hexdigest()[:USER_KEY_CHARS]
    assert len(user_key(user)) == USER_KEY_CHARS == 32
    assert len(session_id) == SESSION_ID_CHARS
    assert limits.AGENTCORE_SESSION_ID_MIN_CHARS <= len(session_id) <= limits.AGENTCORE_SESSION_ID_MAX_CHARS
    assert AGENTCORE_SESSION_ID.match(session_id)


def test_ids_of_one_user_differ_and_share_the_users_prefix() -> None:
    ids = {new_session_id("u-1") for _ in range(20)}
    assert len(ids) == 20
    assert all(i.startswith(user_session_id_prefix("u-1")) for i in ids)
    assert not any(i.startswith(user_session_id_prefix("u-2")) for i in ids)


def test_a_users_history_prefix_covers_their_conversations_only() -> None:
    mine = session_history_prefix(new_session_id("u"))
    theirs = session_history_prefix(new_session_id("u2"))
    assert mine.startswith(user_history_prefix("u")) and not theirs.startswith(user_history_prefix("u"))
    assert mine.startswith("conversations/session_kokoro-relay-conversation-")
    assert mine.startswith(gateway_history_prefix()) and theirs.startswith(gateway_history_prefix())
    # fixed length: no user's prefix is a prefix of another's, whatever the ids
    assert len(user_history_prefix("u")) == len(user_history_prefix("a much longer user id"))


@pytest.mark.parametrize(("configured", "root"), [("conversations/", "conversations/"), ("/a/b", "a/b/"), ("", "")])
def test_prefixes_follow_strands_handling_of_the_configured_prefix(configured: str, root: str) -> None:
    assert session_history_prefix("s" * 40, configured) == f"{root}session_{'s' * 40}/"
    assert user_history_prefix("u", configured) == f"{root}session_{user_session_id_prefix('u')}"


def test_an_empty_user_id_is_refused() -> None:
    with pytest.raises(InvalidUserIdError, match="empty"):
        new_session_id("")
