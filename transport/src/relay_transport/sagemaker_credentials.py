"""AWS credentials for the SageMaker HTTP/2 SDK, resolved through boto3.

The HTTP/2 SDK has its own credential chain; boto3's is the one every other part of the agent (and AgentCore's
execution role, ECS task roles, EC2 instance profiles, SSO profiles) already relies on. :class:`BotoCredentialsResolver`
adapts a ``boto3.Session`` to the SDK's identity-resolver interface, so the SDK signs the request and every
event with whatever boto3 resolves, and refreshes temporary credentials the way boto3 does.
"""

from __future__ import annotations

import asyncio
from typing import Any, Self

import boto3
from botocore.credentials import Credentials, ReadOnlyCredentials
from botocore.exceptions import BotoCoreError
from smithy_aws_core.identity import AWSCredentialsIdentity, AWSIdentityProperties

from relay_transport.errors import TtsUnavailableError


class BotoCredentialsResolver:
    """An SDK ``IdentityResolver[AWSCredentialsIdentity, AWSIdentityProperties]`` backed by a boto3 session.

    Each :meth:`get_identity` asks boto3 for frozen credentials in a worker thread (a refresh may call STS or
    the instance metadata service, which must not block the event loop), so refreshable credentials stay
    fresh for as long as a stream lives: the SDK asks for an identity for every event it signs.
    Raises :class:`~relay_transport.errors.TtsUnavailableError` when boto3 finds no credentials.

    The SDK deep-copies its configuration per client; the resolver is shared, not copied, by those copies
    (it holds no per-call state, and a boto3 session cannot be deep-copied)."""

    def __init__(self, session: boto3.Session) -> None:
        self._session = session

    async def get_identity(self, *, properties: AWSIdentityProperties) -> AWSCredentialsIdentity:
        """The current credentials, refreshed by boto3 when they are about to expire."""
        frozen = await asyncio.to_thread(self._frozen)
        if frozen.access_key is None or frozen.secret_key is None:
            raise TtsUnavailableError(
                "boto3 returned credentials without an access key or secret key: check the AWS profile or role"
            )
        return AWSCredentialsIdentity(
            access_key_id=frozen.access_key,
            secret_access_key=frozen.secret_key,
            session_token=frozen.token,
        )

    async def invalidate(self) -> None:
        """Nothing to discard: boto3 owns the cache and refreshes it itself."""

    def _frozen(self) -> ReadOnlyCredentials:
        try:
            credentials: Credentials | None = self._session.get_credentials()
            if credentials is None:
                raise TtsUnavailableError(
                    "no AWS credentials found for the SageMaker TTS endpoint: give the agent a role (AgentCore "
                    "execution role, task or instance role) or set AWS_PROFILE / AWS_ACCESS_KEY_ID"
                )
            return credentials.get_frozen_credentials()
        except (BotoCoreError, RuntimeError) as exc:  # botocore raises RuntimeError when a refresh yields stale keys
            raise TtsUnavailableError(
                f"cannot resolve AWS credentials for the SageMaker TTS endpoint: {exc}; check the agent's role "
                "or AWS profile"
            ) from exc

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        return self


__all__ = ["BotoCredentialsResolver"]
