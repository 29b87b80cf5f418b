"""Lambda task ``relay_functions.ops.cleanup_inventory.handler``: what exists, before (the plan) and after (the
report) a cleanup.

Two sources, merged: this deployment's named resources (looked up one by one; a lookup never fails on "not
found") and every resource tagged ``Project=<PROJECT_TAG>`` (Resource Groups Tagging API), so that something the
names miss still shows. Resources that cost money while idle (SageMaker endpoints, S3 buckets, ECR repositories,
AgentCore runtimes) are flagged ``billable``.

Input ``{"stage": "plan" | "final", "request": <execution input>, "names": {...}}``.
- plan -> ``{"dry_run", "parts", "would_delete", "existing"}`` (``parts`` with defaults filled in); asking for
  ``ecr_repository`` when the images live in the CDK bootstrap's shared repository fails here, before anything is
  deleted (:func:`~relay_functions.ops.cleanup_targets.refuse_shared_repository`);
- final -> ``{"remaining", "billable", "requested_remaining", "done", "nothing_billable_left"}``.
"""

from __future__ import annotations

import os
from typing import Any, Final

import boto3
from aws_lambda_powertools import Logger

from relay_functions.ops.cleanup_targets import (
    CleanupNames,
    Part,
    ResourceKind,
    is_cdk_asset_repository,
    parse_parts,
    refuse_shared_repository,
    resource_status,
)
from relay_functions.ops.errors import InvalidTaskInputError

logger = Logger(service="relay-ops")
PROJECT_TAG_KEY: Final = "Project"
DEFAULT_PROJECT: Final = "kokoro-relay"
BILLABLE_KINDS: Final = frozenset(
    {ResourceKind.ENDPOINT, ResourceKind.BUCKET, ResourceKind.REPOSITORY, ResourceKind.AGENT_RUNTIME}
)
_BILLABLE_ARN_MARKERS: Final = (
    (":sagemaker:", ":endpoint/"),
    (":s3:::", ""),
    (":ecr:", ":repository/"),
    (
        ":bedrock-agentcore:",
        ":runtime/",
    ),
)


def named_resources(names: CleanupNames) -> list[dict[str, Any]]:
    """Each named resource that exists, with its status."""
    found = []
    for part in Part:
        for kind, name in names.resources(part):
            status = resource_status(kind, name)
            if status is None:
                continue
            if kind is ResourceKind.REPOSITORY and is_cdk_asset_repository(name):
                # every CDK app's images: not this deployment's to remove, so never "billable left behind"
                found.append({"kind": kind.value, "name": name, "status": status, "billable": False, "shared": True})
            else:
                found.append({"kind": kind.value, "name": name, "status": status, "billable": kind in BILLABLE_KINDS})
    return found


def _billable_arn(arn: str) -> bool:
    return any(a in arn and b in arn for a, b in _BILLABLE_ARN_MARKERS)


def tagged_resources(project: str) -> list[str]:
    """ARNs of every resource tagged ``Project=<project>`` in this region."""
    client = boto3.client("resourcegroupstaggingapi")
    arns: list[str] = []
    token = ""
    while True:
        page = client.get_resources(TagFilters=[{"Key": PROJECT_TAG_KEY, "Values": [project]}], PaginationToken=token)
        arns += [str(r["ResourceARN"]) for r in page.get("ResourceTagMappingList", [])]
        token = page.get("PaginationToken", "")
        if not token:
            return arns


def inventory(names: CleanupNames, project: str) -> list[dict[str, Any]]:
    """Named resources, plus tagged ones they do not already cover."""
    found = named_resources(names)
    covered = {item["name"] for item in found}
    for arn in tagged_resources(project):
        tail = arn.rsplit(":", 1)[-1].rsplit("/", 1)[-1]
        if tail not in covered:
            found.append({"kind": "tagged", "name": tail, "arn": arn, "billable": _billable_arn(arn)})
    return found


def plan(request: dict[str, Any], names: CleanupNames, project: str) -> dict[str, Any]:
    dry_run = request.get("dry_run", False)
    if not isinstance(dry_run, bool):
        raise InvalidTaskInputError("'dry_run' must be true or false")
    parts = parse_parts(request.get("parts"))
    if parts[Part.ECR_REPOSITORY]:
        refuse_shared_repository(names.repository)
    existing = inventory(names, project)
    present = {item["name"] for item in existing}
    would_delete = [
        {"kind": kind.value, "name": name}
        for part, wanted in parts.items()
        if wanted
        for kind, name in names.resources(part)
        if name in present
    ]
    return {
        "dry_run": dry_run,
        "parts": {p.value: v for p, v in parts.items()},
        "would_delete": would_delete,
        "existing": existing,
    }


def final(request: dict[str, Any], names: CleanupNames, project: str) -> dict[str, Any]:
    parts = parse_parts(request.get("parts"))
    remaining = inventory(names, project)
    requested = {name for part, wanted in parts.items() if wanted for _, name in names.resources(part)}
    requested_remaining = [item for item in remaining if item["name"] in requested]
    billable = [item for item in remaining if item["billable"]]
    return {
        "remaining": remaining,
        "billable": billable,
        "requested_remaining": requested_remaining,
        "done": not requested_remaining,
        "nothing_billable_left": not billable,
    }


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    names = CleanupNames.from_event(event.get("names"))
    request = event.get("request") or {}
    if not isinstance(request, dict):
        raise InvalidTaskInputError('the cleanup input must be an object: {"parts": {...}, "dry_run": false}')
    project = os.environ.get("PROJECT_TAG", DEFAULT_PROJECT)
    stage = event.get("stage")
    if stage == "plan":
        result = plan(request, names, project)
    elif stage == "final":
        result = final(request, names, project)
    else:
        raise InvalidTaskInputError("'stage' must be 'plan' or 'final'")
    logger.info("cleanup inventory", stage=stage, items=len(result.get("existing", result.get("remaining", []))))
    return result


__all__ = ["final", "handler", "inventory", "plan"]
