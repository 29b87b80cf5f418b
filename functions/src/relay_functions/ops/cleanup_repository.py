"""Lambda task ``relay_functions.ops.cleanup_repository.handler``: delete the ECR repository and every image in it.

A Lambda rather than the ``aws-sdk:ecr:deleteRepository`` integration because ECR's members are camelCase
(``repositoryName``) and moto's executor cannot map the integration's PascalCase parameters onto them, so the
integration could not be executed in the tests. Deletion is synchronous: the task confirms the repository is gone.

Input ``{"repository"}``; output ``{"gone": true, "images_deleted"}``. A repository that does not exist is gone
(NotFound counts as success); a refusal raises :class:`~relay_functions.ops.errors.DeleteRefusedError`. A CDK
bootstrap's image repository (``cdk-<qualifier>-container-assets-...``, every CDK app's images) is never deleted:
:class:`~relay_functions.ops.errors.SharedResourceError`, before any ECR call.
"""

from __future__ import annotations

from typing import Any

import boto3
from aws_lambda_powertools import Logger
from botocore.exceptions import ClientError

from relay_functions.ops.cleanup_targets import ResourceKind, refuse_shared_repository, resource_status
from relay_functions.ops.errors import DeleteRefusedError, InvalidTaskInputError

logger = Logger(service="relay-ops")


def delete_repository(ecr: Any, repository: str) -> dict[str, Any]:
    refuse_shared_repository(repository)
    try:
        answer = ecr.delete_repository(repositoryName=repository, force=True)
    except ClientError as exc:
        error = exc.response["Error"]
        if error.get("Code") == "RepositoryNotFoundException":
            return {"gone": True, "images_deleted": 0}
        raise DeleteRefusedError(
            f"ECR repository {repository} still exists: its deletion was refused: {error.get('Code')}: "
            f"{error.get('Message')}"
        ) from exc
    if resource_status(ResourceKind.REPOSITORY, repository) is not None:
        raise DeleteRefusedError(f"ECR repository {repository} still exists after its deletion was accepted")
    return {"gone": True, "images_deleted": int(answer.get("repository", {}).get("imageCount", 0) or 0)}


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    repository = event.get("repository")
    if not isinstance(repository, str) or not repository:
        raise InvalidTaskInputError("give 'repository', the ECR repository name")
    result = delete_repository(boto3.client("ecr"), repository)
    logger.info("ecr repository cleanup", repository=repository, **result)
    return result


__all__ = ["delete_repository", "handler"]
