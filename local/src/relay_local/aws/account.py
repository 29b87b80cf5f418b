"""The account and region every local stand-in answers as: the ARNs, event ``requestContext`` and SDK clients of
the local stack name these, as AWS's would name the deployment's."""

from __future__ import annotations

from typing import Final

LOCAL_REGION: Final = "us-east-1"
LOCAL_ACCOUNT: Final = "000000000000"

__all__ = ["LOCAL_ACCOUNT", "LOCAL_REGION"]
