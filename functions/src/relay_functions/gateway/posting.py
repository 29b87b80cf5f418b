"""Posting messages to a client's WebSocket connection through API Gateway's ``@connections`` API.

:class:`ConnectionPoster` is what the route handlers and the relay depend on; :class:`ManagementApiPoster`
implements it with ``apigatewaymanagementapi.post_to_connection``:

- ``GoneException`` (the client disconnected) is an answer, not an error: ``post`` returns False.
- ``LimitExceededException``, throttling and 5xx are retried with bounded exponential backoff and full
  jitter (:class:`Backoff`); past the last attempt, :class:`PostFailedError`.
- Anything else (e.g. ``PayloadTooLargeException``, ``ForbiddenException``) raises :class:`PostFailedError`
  at once: retrying cannot help.

Every message must already be within the frame budget (relay_core's framer guarantees it for turn messages).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from botocore.exceptions import BotoCoreError, ClientError

if TYPE_CHECKING:
    from mypy_boto3_apigatewaymanagementapi import ApiGatewayManagementApiClient

GONE_CODES = frozenset({"GoneException"})
RETRYABLE_CODES = frozenset(
    {
        "LimitExceededException",
        "ThrottlingException",
        "TooManyRequestsException",
        "InternalServerError",
        "InternalServerErrorException",
        "ServiceUnavailable",
        "ServiceUnavailableException",
    }
)


class PostFailedError(Exception):
    """A message could not be delivered (not because the client left): retries exhausted or a permanent error."""


class ConnectionPoster(Protocol):
    def post(self, connection_id: str, message: str) -> bool:
        """Deliver ``message`` (a JSON text frame); False when the connection is gone."""
        ...


@dataclass(frozen=True, slots=True)
class Backoff:
    """Bounded exponential backoff with full jitter: attempt n (from 1) waits uniform(0, min(cap, base * 2**n))."""

    attempts: int = 6
    base_s: float = 0.05
    cap_s: float = 2.0

    def delay(self, attempt: int, rng: random.Random) -> float:
        return rng.uniform(0.0, min(self.cap_s, self.base_s * 2**attempt))


class ManagementApiPoster:
    """``post_to_connection`` with the retry policy above. One per @connections endpoint."""

    def __init__(
        self,
        client: ApiGatewayManagementApiClient,
        *,
        backoff: Backoff = Backoff(),
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self._client = client
        self._backoff = backoff
        self._sleep = sleep
        self._rng = rng or random.Random()
        self.retries = 0
        """Retries made so far (throttling seen), for metrics."""

    def post(self, connection_id: str, message: str) -> bool:
        data = message.encode("utf-8")
        for attempt in range(1, self._backoff.attempts + 1):
            try:
                self._client.post_to_connection(ConnectionId=connection_id, Data=data)
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code", "")
                status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
                if code in GONE_CODES or status == 410:
                    return False
                if code not in RETRYABLE_CODES and status < 500 and status != 429:
                    raise PostFailedError(f"post_to_connection refused the message: {code or status}") from exc
                if attempt == self._backoff.attempts:
                    raise PostFailedError(
                        f"post_to_connection still failing after {attempt} attempts: {code or status}"
                    ) from exc
            except BotoCoreError as exc:
                if attempt == self._backoff.attempts:
                    raise PostFailedError(f"post_to_connection unreachable: {type(exc).__name__}") from exc
            else:
                return True
            self.retries += 1
            self._sleep(self._backoff.delay(attempt, self._rng))
        raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover
