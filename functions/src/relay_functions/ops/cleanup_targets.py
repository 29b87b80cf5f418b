"""What the cleanup can remove, and whether each thing still exists.

Each resource is a (:class:`ResourceKind`, name) pair. :func:`resource_status` answers with the resource's status
(``"exists"`` for those that have none), or ``None`` when it is gone; "not found" is never an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

import boto3
from botocore.exceptions import ClientError

from relay_functions.ops import agent_runtimes
from relay_functions.ops.errors import InvalidTaskInputError, SharedResourceError


class ResourceKind(StrEnum):
    AGENT_RUNTIME = "agentcore-runtime"
    ENDPOINT = "sagemaker-endpoint"
    ENDPOINT_CONFIG = "sagemaker-endpoint-config"
    MODEL = "sagemaker-model"
    BUCKET = "s3-bucket"
    REPOSITORY = "ecr-repository"


class Part(StrEnum):
    """What an operator asks the cleanup to remove."""

    AGENT_RUNTIME = "agent_runtime"
    SAGEMAKER_ENDPOINT = "sagemaker_endpoint"
    WEIGHTS_BUCKET = "weights_bucket"
    HISTORY_BUCKET = "history_bucket"
    """The voice agent's conversation-history bucket: every user's stored conversations."""
    ECR_REPOSITORY = "ecr_repository"


DEFAULT_PARTS: Final[dict[Part, bool]] = {
    Part.AGENT_RUNTIME: True,
    Part.SAGEMAKER_ENDPOINT: True,
    Part.WEIGHTS_BUCKET: False,
    Part.HISTORY_BUCKET: False,
    Part.ECR_REPOSITORY: False,
}
"""The runtime and the endpoint go by default; the weights cache, the users' conversations and the images only when
asked explicitly (the conversations also expire by the history bucket's lifecycle rule)."""

CDK_ASSET_REPOSITORY: Final = re.compile(r"cdk-[a-z0-9]+-container-assets-")
"""The name of a CDK bootstrap's image repository (``cdk-<qualifier>-container-assets-<account>-<region>``,
``hnb659fds`` by default): every CDK app of the account and region pushes its images there."""

DELETING_STATUSES: Final = frozenset({"Deleting", "DELETING"})
FAILED_DELETE_STATUSES: Final = frozenset({"DELETE_FAILED"})


@dataclass(frozen=True, slots=True)
class CleanupNames:
    """The names of this deployment's resources (substituted into the definition by the CDK app)."""

    agent_runtime: str
    endpoint: str
    endpoint_config: str
    model: str
    weights_bucket: str
    history_bucket: str
    repository: str

    @classmethod
    def from_event(cls, obj: Any) -> CleanupNames:
        if not isinstance(obj, dict):
            raise InvalidTaskInputError("'names' must be an object of resource names")
        try:
            return cls(**{k: str(obj[k]) for k in cls.__slots__})
        except KeyError as exc:
            raise InvalidTaskInputError(f"'names' lacks {exc.args[0]!r}") from exc

    def resources(self, part: Part) -> list[tuple[ResourceKind, str]]:
        """The resources one part stands for, in deletion order."""
        return {
            Part.AGENT_RUNTIME: [(ResourceKind.AGENT_RUNTIME, self.agent_runtime)],
            Part.SAGEMAKER_ENDPOINT: [
                (ResourceKind.ENDPOINT, self.endpoint),
                (ResourceKind.ENDPOINT_CONFIG, self.endpoint_config),
                (ResourceKind.MODEL, self.model),
            ],
            Part.WEIGHTS_BUCKET: [(ResourceKind.BUCKET, self.weights_bucket)],
            Part.HISTORY_BUCKET: [(ResourceKind.BUCKET, self.history_bucket)],
            Part.ECR_REPOSITORY: [(ResourceKind.REPOSITORY, self.repository)],
        }[part]


def is_cdk_asset_repository(name: str) -> bool:
    """Whether ``name`` (a repository name, or a rendering of one with CloudFormation pseudo parameters) is a CDK
    bootstrap's shared image repository."""
    return CDK_ASSET_REPOSITORY.search(name) is not None


def refuse_shared_repository(name: str) -> None:
    """Raise :class:`SharedResourceError` when ``name`` is a CDK bootstrap's image repository: deleting it (with
    ``force``) would delete every CDK app's images in the account and region."""
    if is_cdk_asset_repository(name):
        raise SharedResourceError(
            f"ECR repository {name} is the CDK bootstrap's image repository, shared by every CDK app in this "
            "account and region: the cleanup never deletes it. Run the cleanup again with "
            '"ecr_repository": false, and delete this deployment\'s images from that repository by hand '
            "(docs/deploy.md, 'What make destroy leaves')"
        )


def parse_parts(obj: Any) -> dict[Part, bool]:
    """The parts to remove: :data:`DEFAULT_PARTS` overridden by ``obj`` (``{"weights_bucket": true, ...}``)."""
    if obj is None:
        return dict(DEFAULT_PARTS)
    if not isinstance(obj, dict):
        raise InvalidTaskInputError("'parts' must be an object such as {\"weights_bucket\": true}")
    unknown = sorted(set(obj) - {p.value for p in Part})
    if unknown:
        valid = ", ".join(p.value for p in Part)
        raise InvalidTaskInputError(f"unknown part(s) {', '.join(unknown)}; the parts are {valid}")
    wrong = [k for k, v in obj.items() if not isinstance(v, bool)]
    if wrong:
        raise InvalidTaskInputError(f"part {wrong[0]!r} must be true or false")
    return {part: bool(obj.get(part.value, default)) for part, default in DEFAULT_PARTS.items()}


def _code(exc: ClientError) -> str:
    return str(exc.response["Error"]["Code"])


def resource_status(
    kind: ResourceKind, name: str, *, control: agent_runtimes.AgentRuntimeControl | None = None
) -> str | None:
    """The resource's status (``"exists"`` when it has none), or ``None`` when it does not exist."""
    try:
        if kind is ResourceKind.AGENT_RUNTIME:
            return (control or agent_runtimes.make_control()).runtime_status(name)
        if kind is ResourceKind.ENDPOINT:
            return str(boto3.client("sagemaker").describe_endpoint(EndpointName=name)["EndpointStatus"])
        if kind is ResourceKind.ENDPOINT_CONFIG:
            boto3.client("sagemaker").describe_endpoint_config(EndpointConfigName=name)
        elif kind is ResourceKind.MODEL:
            boto3.client("sagemaker").describe_model(ModelName=name)
        elif kind is ResourceKind.BUCKET:
            boto3.client("s3").head_bucket(Bucket=name)
        elif kind is ResourceKind.REPOSITORY:
            boto3.client("ecr").describe_repositories(repositoryNames=[name])
    except ClientError as exc:
        code = _code(exc)
        message = str(exc.response["Error"].get("Message", ""))
        if code in {"404", "NoSuchBucket", "RepositoryNotFoundException", "ResourceNotFoundException"}:
            return None
        if code == "ValidationException" and ("Could not find" in message or "not found" in message.lower()):
            return None  # SageMaker answers a missing endpoint/config/model with ValidationException
        raise
    return "exists"


__all__ = [
    "CDK_ASSET_REPOSITORY",
    "DEFAULT_PARTS",
    "DELETING_STATUSES",
    "FAILED_DELETE_STATUSES",
    "CleanupNames",
    "Part",
    "ResourceKind",
    "is_cdk_asset_repository",
    "parse_parts",
    "refuse_shared_repository",
    "resource_status",
]
