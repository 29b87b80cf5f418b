"""Where conversations are kept: Strands' own ``S3SessionManager`` on the history bucket, or nowhere (memory only).

With a bucket (``VOICE_AGENT_HISTORY_BUCKET``) every conversation is a Strands session keyed by the AgentCore
runtime session id, under ``<prefix>session_<id>/`` in Strands' layout (``session.json``, ``agents/agent_voice/``
with ``agent.json`` and one ``messages/message_<n>.json`` per message): a turn after the runtime session ended, or
after the agent process was restarted, continues the conversation. Strands stores each message as it is added
(its hooks) and the conversation manager's state after each turn; an agent restores what its
``SlidingWindowConversationManager`` keeps (``VOICE_AGENT_HISTORY_WINDOW_MESSAGES``). Those writes are queued, not
made where Strands asks for them (on the agent's event loop, before the model call): the store's
:class:`~voice_agent.history_writer.HistoryWriter` makes them on a thread of its own, in order, and a turn waits
for its conversation's writes before its terminal event (:meth:`HistoryStore.flush`).

The bucket's lifecycle rule deletes objects :data:`~relay_core.agent.defaults.HISTORY_EXPIRY_DAYS` after they were
written, one by one; so that it never removes part of a conversation still in use, a conversation whose first
object (``session.json``) is older than :data:`~relay_core.agent.defaults.HISTORY_MAX_AGE_DAYS` starts over, and
what a partial expiry left behind (no ``session.json``) is deleted before a conversation of that id starts.

Opening a conversation (:meth:`HistoryStore.session_manager`, and the agent's initialization that follows) reads
S3 and blocks: call it on a worker thread, not on the agent's event loop. Nothing else blocks on S3.
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
from strands.types.exceptions import SessionException
from strands.types.session import Session, SessionAgent, SessionMessage

from relay_core.agent.defaults import HISTORY_MAX_AGE_DAYS
from voice_agent.errors import VoiceAgentError
from voice_agent.history_writer import HistoryWriter, Write

logger = logging.getLogger(__name__)

WRITE_WAIT_TIMEOUT_S: Final = 30.0
"""How long a read of a conversation waits for its queued writes (S3 calls time out and retry well within it)."""
FLUSH_TIMEOUT_S: Final = 10.0
"""How long a turn waits, before its terminal event, for what it stored (in practice written long before: the
reply's text is complete, and stored, while its audio is still being spoken)."""

S3_CONNECT_TIMEOUT_S: Final = 5.0
S3_READ_TIMEOUT_S: Final = 10.0
"""The store's S3 calls give up well within :data:`WRITE_WAIT_TIMEOUT_S` (botocore's defaults are 60 s each)."""

STRANDS_USER_AGENT: Final = "strands-agents"
"""The user-agent suffix ``S3SessionManager`` puts on the clients it makes (kept on the shared one)."""


class HistoryUnavailableError(VoiceAgentError):
    """The history bucket could not be read or written (missing bucket, no permission, S3 unreachable)."""


class ConversationSessionManager(S3SessionManager):
    """Strands' ``S3SessionManager`` for one conversation, whose writes go through the store's
    :class:`~voice_agent.history_writer.HistoryWriter` (off the agent's event loop, in order) and which starts the
    conversation over (its stored objects deleted) when it began more than ``max_age`` ago or was partly expired by
    the bucket's lifecycle rule.

    What runs where: opening a conversation reads it (one S3 listing for a new conversation; for a stored one the
    listing, ``session.json``, ``agent.json`` and its messages) on the caller's thread; every write (the session,
    the agent, each message, the agent's state after a turn, a barge-in's redaction) is queued, its data copied when
    it is queued. A read of the conversation made later waits for its queued writes first, so it reads what was
    written; a conversation this manager created is known to be empty, so its first reads need no S3 at all."""

    def __init__(
        self,
        session_id: str,
        *,
        bucket: str,
        prefix: str,
        max_age: timedelta,
        writer: HistoryWriter,
        **kwargs: Any,
    ) -> None:
        # read by read_session, which the base constructor calls
        self._max_age = max_age
        self._writer = writer
        self._empty = False
        """True while the stored conversation is known to hold no agent: this manager found nothing stored and
        created the session itself (the only writer of a conversation is the agent process that holds it)."""
        super().__init__(session_id=session_id, bucket=bucket, prefix=prefix, **kwargs)

    @property
    def started_at(self) -> datetime:
        """When the stored conversation began (its ``session.json``)."""
        return _parse_time(self.session.created_at)

    # --- reads -----------------------------------------------------------------------------------------------
    def read_session(self, session_id: str, **kwargs: Any) -> Session | None:
        """The stored session, or None (the base class then creates one) when there is none, when it is older
        than ``max_age``, or when only a partial expiry's leftovers remain; those two are deleted first.

        One listing of the conversation's folder answers whether anything is stored (a new conversation costs that
        one S3 call); ``session.json`` is read only when it is there."""
        if self._writer.on_writer_thread():
            return super().read_session(session_id, **kwargs)
        self._wait_for_writes()
        has_session, has_leftovers = self._stored(session_id)
        session = super().read_session(session_id, **kwargs) if has_session else None
        if session is None:
            if has_leftovers:
                logger.info("conversation %s: partly expired history deleted; it starts over", session_id)
                self.delete_session(session_id)
            self._empty = True
            return None
        age = datetime.now(UTC) - _parse_time(session.created_at)
        if age > self._max_age:
            logger.info(
                "conversation %s: began %d days ago; its history is deleted and it starts over", session_id, age.days
            )
            self.delete_session(session_id)
            self._empty = True
            return None
        return session

    def read_agent(self, session_id: str, agent_id: str, **kwargs: Any) -> SessionAgent | None:
        if self._writer.on_writer_thread():
            return super().read_agent(session_id, agent_id, **kwargs)
        if self._empty:
            return None
        self._wait_for_writes()
        return super().read_agent(session_id, agent_id, **kwargs)

    def read_message(self, session_id: str, agent_id: str, message_id: int, **kwargs: Any) -> SessionMessage | None:
        if not self._writer.on_writer_thread():
            self._wait_for_writes()
        return super().read_message(session_id, agent_id, message_id, **kwargs)

    def list_messages(
        self, session_id: str, agent_id: str, limit: int | None = None, offset: int = 0, **kwargs: Any
    ) -> list[SessionMessage]:
        if not self._writer.on_writer_thread():
            self._wait_for_writes()
        return super().list_messages(session_id, agent_id, limit=limit, offset=offset, **kwargs)

    # --- writes: queued, each with a copy of its data made now; the base class's own write runs on the writer ----
    def create_session(self, session: Session, **kwargs: Any) -> Session:
        data = session.to_dict()
        write = S3SessionManager.create_session
        self._queue(session.session_id, "session.json", lambda: write(self, Session.from_dict(data)))
        return session

    def create_agent(self, session_id: str, session_agent: SessionAgent, **kwargs: Any) -> None:
        data = session_agent.to_dict()
        self._empty = False
        write = S3SessionManager.create_agent
        self._queue(session_id, "agent.json", lambda: write(self, session_id, SessionAgent.from_dict(data)))

    def update_agent(self, session_id: str, session_agent: SessionAgent, **kwargs: Any) -> None:
        data = session_agent.to_dict()
        write = S3SessionManager.update_agent
        self._queue(session_id, "agent.json", lambda: write(self, session_id, SessionAgent.from_dict(data)))

    def create_message(self, session_id: str, agent_id: str, session_message: SessionMessage, **kwargs: Any) -> None:
        data = session_message.to_dict()
        write = S3SessionManager.create_message
        what = f"message {session_message.message_id}"
        self._queue(session_id, what, lambda: write(self, session_id, agent_id, SessionMessage.from_dict(data)))

    def update_message(self, session_id: str, agent_id: str, session_message: SessionMessage, **kwargs: Any) -> None:
        data = session_message.to_dict()
        write = S3SessionManager.update_message
        what = f"message {session_message.message_id}"
        self._queue(session_id, what, lambda: write(self, session_id, agent_id, SessionMessage.from_dict(data)))

    def _queue(self, session_id: str, what: str, write: Write) -> None:
        self._writer.submit(session_id, f"{what} of conversation {session_id}", write)

    def _wait_for_writes(self) -> None:
        """Wait for the conversation's queued writes (a read then sees them)."""
        if not self._writer.flush(self.session_id, timeout=WRITE_WAIT_TIMEOUT_S):
            raise SessionException(
                f"the conversation's queued history writes did not finish within {WRITE_WAIT_TIMEOUT_S:.0f} s"
            )

    def _stored(self, session_id: str) -> tuple[bool, bool]:
        """(``session.json`` is stored, anything else is stored): one listing of the conversation's folder."""
        folder = self._get_session_path(session_id)
        listing = self.client.list_objects_v2(Bucket=self.bucket, Prefix=folder, Delimiter="/")
        names = {item["Key"].removeprefix(folder) for item in listing.get("Contents", [])}
        return "session.json" in names, bool(listing.get("CommonPrefixes")) or bool(names - {"session.json"})


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
        self.writer = HistoryWriter()
        """Every conversation's writes, in order, on one thread (a turn stores a few small objects)."""
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
                writer=self.writer,
                boto_session=cast("boto3.Session", _OneClient(self._shared_client())),
            )
        except Exception as exc:  # botocore, Strands' SessionException: all mean the same to the turn
            raise HistoryUnavailableError(
                f"the conversation history in {self.location} could not be read ({type(exc).__name__}: {exc}); "
                "check VOICE_AGENT_HISTORY_BUCKET, the S3 endpoint and the agent role's S3 permissions"
            ) from exc

    @property
    def client(self) -> Any:
        """The store's one S3 client (made on first use)."""
        return self._shared_client()

    def flush(self, session_id: str, *, timeout: float = FLUSH_TIMEOUT_S) -> bool:
        """Wait until the conversation's queued writes are done (attempted: a failure is logged); False at
        ``timeout``. Blocking: call it on a worker thread."""
        return self.writer.flush(session_id, timeout=timeout)

    def _load_model(self) -> None:
        with self._client_lock:
            self._botocore.get_service_model("s3")

    def _shared_client(self) -> Any:
        with self._client_lock:
            if self._client is None:
                config = BotocoreConfig(
                    user_agent_extra=STRANDS_USER_AGENT,
                    connect_timeout=S3_CONNECT_TIMEOUT_S,
                    read_timeout=S3_READ_TIMEOUT_S,
                    retries={"mode": "standard", "max_attempts": 3},
                )
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
