"""A Lambda context object for handlers invoked in-process, with the attributes AWS's Python runtime provides
(Powertools' ``inject_lambda_context`` reads them)."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field

from relay_local.aws.account import LOCAL_ACCOUNT, LOCAL_REGION

DEFAULT_TIMEOUT_S = 900.0


@dataclass
class LambdaContext:
    """What ``context`` is inside a Lambda handler: names, ids, and the time left before the function's timeout."""

    function_name: str
    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_limit_in_mb: int = 512
    function_version: str = "$LATEST"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    _deadline: float = field(default=0.0, repr=False)

    def __post_init__(self) -> None:
        self._deadline = time.monotonic() + self.timeout_s

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:{LOCAL_REGION}:{LOCAL_ACCOUNT}:function:{self.function_name}"

    @property
    def log_group_name(self) -> str:
        return f"/aws/lambda/{self.function_name}"

    @property
    def log_stream_name(self) -> str:
        return f"local/[{self.function_version}]{self.aws_request_id}"

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds until this invocation's timeout (never negative)."""
        return max(0, int((self._deadline - time.monotonic()) * 1000))


__all__ = ["LambdaContext"]
