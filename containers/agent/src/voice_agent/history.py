"""Where conversations are kept: Strands' own ``S3SessionManager`` on the history bucket, or nowhere (memory only).

With a bucket (``VOICE_AGENT_HISTORY_BUCKET``) every conversation is a Strands session keyed by the AgentCore
runtime session id, under ``<prefix>session_<id>/`` in Strands' layout (``session.json``, ``agents/agent_voice/``
with ``agent.json`` and one ``messages/message_<n>.json`` per message): a turn after the runtime session ended, or
after the agent process was restarted, continues the conversation. Strands writes each message as it is added
(its hooks) and the conversation manager's state after each turn; an agent restores what its
``SlidingWindowConversationManager`` keeps (``VOICE_AGENT_HISTORY_WINDOW_MESSAGES``).

The bucket's lifecycle rule deletes objects :data:`~relay_core.agent.defaults.HISTORY_EXPIRY_DAYS` after they were
written, one by one; so that it never removes part of a conversation still in use, a conversation whose first
object (``session.json``) is older than :data:`~relay_core.agent.defaults.HISTORY_MAX_AGE_DAYS` starts over, and
what a partial expiry left behind (no ``session.json``) is deleted before a conversation of that id starts.

Every method here does blocking S3 I/O: call them on a worker thread, not on the agent's event loop.
"""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime, timedelta
from typing import Any, Final, cast

import boto3
import botocore.session
from botocore.config import Config as BotocoreConfig
from strands.session.s3_session_manager import S3SessionManager
from strands.types.session import Session

from relay_core.agent.defaults import HISTORY_MAX_AGE_DAYS
from voice_agent.errors import VoiceAgentError

logger = logging.getLogger(__name__)

STRANDS_USER_AGENT: Final = "strands-agents"
"""The user-agent suffix ``S3SessionManager`` puts on the clients it makes (kept on the shared one)."""


class HistoryUnavailableError(VoiceAgentError):
    """The history bucket could not be read or written (missing bucket, no permission, S3 unreachable)."""


class ConversationSessionManager(S3SessionManager):
    """Strands' ``S3SessionManager`` for one conversation, which starts the conversation over (its stored objects
    deleted) when it began more than ``max_age`` ago or was partly expired by the bucket's lifecycle rule."""

    def __init__(self, session_id: str, *, bucket: str, prefix: str, max_age: timedelta, **kwargs: Any) -> None:
        self._max_age = max_age  # read by read_session, which the base constructor calls
        super().__init__(session_id=session_id, bucket=bucket, prefix=prefix, **kwargs)

    @property
    def started_at(self) -> datetime:
        """When the stored conversation began (its ``session.json``)."""
        return _parse_time(self.session.created_at)

    def read_session(self, session_id: str, **kwargs: Any) -> Session | None:
        """The stored session, or None (the base class then creates one) when there is none, when it is older
        than ``max_age``, or when only a partial expiry's leftovers remain; those two are deleted first."""
        session = super().read_session(session_id, **kwargs)
        if session is None:
            if self._has_objects(session_id):
                logger.info("conversation %s: partly expired history deleted; it starts over", session_id)
                self.delete_session(session_id)
            return None
        age = datetime.now(UTC) - _parse_time(session.created_at)
        if age > self._max_age:
            logger.info(
                "conversation %s: began %d days ago; its history is deleted and it starts over", session_id, age.days
            )
            self.delete_session(session_id)
            return None
        return session

    def _has_objects(self, session_id: str) -> bool:
        listing = self.client.list_objects_v2(Bucket=self.bucket, Prefix=self._get_session_path(session_id), MaxKeys=1)
        return bool(listing.get("KeyCount", 0))


class HistoryStore:
    """The history bucket: one :class:`ConversationSessionManager` per conversation, all on ONE S3 client (a boto3
    session and client cost about 12 MB and 0.2 s of CPU each, measured: not one per conversation; botocore
    clients are thread-safe; S3's service model is loaded on a thread of its own when the store is made). boto3
    finds the endpoint and credentials the standard way when the first conversation opens (``AWS_ENDPOINT_URL_S3``
    points it at a local moto)."""

    def __init__(
        self,
        bucket: str,
        prefix: str,
        *,
        region: str | None = None,
        max_age: timedelta = timedelta(days=HISTORY_MAX_AGE_DAYS),
    ) -> None:
        self.bucket = bucket
        self.prefix = prefix
        self.region = region
        self.max_age = max_age
        self._client: Any = None
        self._client_lock = threading.Lock()
        self._botocore = botocore.session.get_session()
        # S3's service model is loaded now, on a thread of its own, so that the first turn does not pay for it
        # (~0.2 s of CPU). The client itself is made at the first conversation: the endpoint and credentials are
        # read then (AWS_ENDPOINT_URL_S3 may be set after the store is made, as the local stack does).
        threading.Thread(target=self._load_model, name="history-s3-model", daemon=True).start()

    @property
    def location(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"

    def session_manager(self, session_id: str) -> ConversationSessionManager:
        """The conversation's session manager, its stored session read (or created). Blocking S3 I/O.

        Raises :class:`HistoryUnavailableError` when S3 refuses or cannot be reached."""
        try:
            return ConversationSessionManager(
                session_id,
                bucket=self.bucket,
                prefix=self.prefix,
                max_age=self.max_age,
                boto_session=cast("boto3.Session", _OneClient(self._shared_client())),
            )
        except Exception as exc:  # botocore, Strands' SessionException: all mean the same to the turn
            raise HistoryUnavailableError(
                f"the conversation history in {self.location} could not be read ({type(exc).__name__}: {exc}); "
                "check VOICE_AGENT_HISTORY_BUCKET, the S3 endpoint and the agent role's S3 permissions"
            ) from exc

    def _load_model(self) -> None:
        with self._client_lock:
            self._botocore.get_service_model("s3")

    def _shared_client(self) -> Any:
        with self._client_lock:
            if self._client is None:
                config = BotocoreConfig(user_agent_extra=STRANDS_USER_AGENT)
                session = boto3.Session(botocore_session=self._botocore, region_name=self.region)
                self._client = session.client("s3", config=config)
            return self._client


class _OneClient:
    """What ``S3SessionManager`` asks its ``boto_session`` for (``.client("s3", config=..., endpoint_url=...)``),
    answered with the store's one client, made with the same user agent Strands gives its own."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def client(self, service_name: str, **_: Any) -> Any:
        if service_name != "s3":
            raise ValueError(f"the history store has an S3 client only, not {service_name!r}")
        return self._client


def _parse_time(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


__all__ = ["ConversationSessionManager", "HistoryStore", "HistoryUnavailableError"]
