"""Short, one-line descriptions of what boto3 raised, for a check's ``found`` text."""

from __future__ import annotations

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, NoRegionError

AwsError = (BotoCoreError, ClientError)
"""Everything a boto3 call raises for an AWS-side or client-side failure (not programming errors)."""


def error_code(error: Exception) -> str:
    """The AWS error code (``AccessDeniedException``), or the botocore exception's class name."""
    if isinstance(error, ClientError):
        return str(error.response.get("Error", {}).get("Code", "ClientError"))
    return type(error).__name__


def describe(error: Exception) -> str:
    """``AccessDeniedException: User ... is not authorized ...`` in one line."""
    if isinstance(error, NoCredentialsError):
        return "no AWS credentials found"
    if isinstance(error, NoRegionError):
        return "no AWS region configured"
    if isinstance(error, ClientError):
        message = str(error.response.get("Error", {}).get("Message", "")).strip()
        return f"{error_code(error)}: {message}" if message else error_code(error)
    return f"{type(error).__name__}: {error}"


def is_access_denied(error: Exception) -> bool:
    """True for the IAM denials of every service (``AccessDenied``, ``AccessDeniedException``, ...)."""
    return error_code(error) in ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation")
