"""Per-user turn rate limit: at most TURNS_PER_MINUTE turns in each calendar minute (UTC).

One DynamoDB item per user and minute (``rate#<user id>#<epoch minute>`` in the connections table) counts the
turns started; the increment is conditional on the count being under the limit, so the check and the count
are one atomic write however many connections the user has. Items expire (TTL) shortly after their minute.
A fixed window admits at most twice the limit across a minute boundary; that is the documented trade-off
for one write per turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from relay_functions.gateway.clock import SYSTEM_CLOCK, Clock
from relay_functions.gateway.connections import is_conditional_failure

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

WINDOW_S = 60


def rate_key_prefix(user_id: str) -> str:
    """What every ``pk`` of the user's per-minute counters begins with (the epoch minute follows)."""
    return f"rate#{user_id}#"


@dataclass(frozen=True, slots=True)
class RateDecision:
    allowed: bool
    retry_after_s: float
    """Seconds until the current window ends (0 when allowed)."""


class TurnRateLimiter:
    def __init__(
        self, client: DynamoDBClient, table: str, *, turns_per_minute: int, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self._db = client
        self._table = table
        self._limit = turns_per_minute
        self._clock = clock

    def try_acquire(self, user_id: str) -> RateDecision:
        """Count one turn for ``user_id`` if the user is under the limit this minute."""
        now = self._clock.now()
        window = int(now // WINDOW_S)
        window_end = (window + 1) * WINDOW_S
        try:
            self._db.update_item(
                TableName=self._table,
                Key={"pk": {"S": f"{rate_key_prefix(user_id)}{window}"}},
                UpdateExpression="ADD turns :one SET expires_at = :exp",
                ConditionExpression="attribute_not_exists(turns) OR turns < :limit",
                ExpressionAttributeValues={
                    ":one": {"N": "1"},
                    ":limit": {"N": str(self._limit)},
                    ":exp": {"N": str(window_end + WINDOW_S)},
                },
            )
        except ClientError as exc:
            if is_conditional_failure(exc):
                return RateDecision(allowed=False, retry_after_s=round(window_end - now, 3))
            raise
        return RateDecision(allowed=True, retry_after_s=0.0)
