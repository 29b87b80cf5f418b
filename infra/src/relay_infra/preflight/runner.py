"""Run every preflight check against one target (a boto3 session and the deployment's config) and report.

:func:`run_checks` never raises for an AWS or local failure: each check turns what went wrong into its own
line, and the checks that need AWS are skipped (and count as failed) when the credentials check fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from relay_infra.preflight import (
    ami,
    bedrock_access,
    bootstrap,
    cost,
    credentials,
    docker,
    instance_change,
    lambda_concurrency,
    quota,
    transaction_search,
)
from relay_infra.preflight.aws_errors import AwsError, describe
from relay_infra.preflight.prices import PRICING_REGION
from relay_infra.preflight.result import CheckResult, Status

if TYPE_CHECKING:
    from relay_infra.config import RelayConfig

"""RelayConfig's field (context ``relay:ttsInferenceAmiVersion``) naming the endpoint's InferenceAmiVersion."""


@dataclass(frozen=True, slots=True)
class Target:
    """What the checks need to know about the deployment, taken from :class:`~relay_infra.config.RelayConfig`."""

    instance_type: str
    min_instances: int
    max_instances: int
    model_id: str
    inference_ami_version: str | None
    tts_image_uri: str | None
    agent_image_uri: str | None
    relay_concurrency: int = 96
    """The relay's reserved concurrency (RelayConfig.relay_concurrency)."""
    endpoint_name: str = "kokoro-relay-dev-tts"
    """The TTS endpoint's fixed name, ``<project>-<env>-tts``."""
    autoscaling: bool = True
    """RelayConfig.tts_autoscaling: whether this deploy registers the variant with Application Auto Scaling."""

    @classmethod
    def from_config(cls, config: RelayConfig) -> Target:
        return cls(
            instance_type=config.tts_instance_type,
            min_instances=config.tts_min_instances,
            max_instances=config.tts_max_instances,
            model_id=config.model_id,
            inference_ami_version=config.tts_inference_ami_version,
            tts_image_uri=config.tts_image_uri,
            agent_image_uri=config.agent_image_uri,
            relay_concurrency=config.relay_concurrency,
            endpoint_name=instance_change.endpoint_name(config.name_prefix),
            autoscaling=config.tts_autoscaling,
        )


def _skipped(name: str) -> CheckResult:
    return CheckResult(
        name, Status.SKIP, "not checked: needs working credentials and a region", "fix the credentials line first"
    )


def run_checks(session: Any, target: Target, *, docker_command: str = "docker") -> list[CheckResult]:
    """Every check, in the order they print: credentials, CDK bootstrap, quota, instance type, Bedrock model,
    Transaction Search, Lambda concurrency, inference AMI, Docker, cost. Only read-only AWS calls are made;
    ``session`` is a ``boto3.session.Session``."""
    from botocore.config import Config  # noqa: PLC0415 - botocore only when checks run

    client_config = Config(connect_timeout=5, read_timeout=20, retries={"max_attempts": 2, "mode": "standard"})
    region: str | None = session.region_name

    def client(service: str, client_region: str | None = None) -> Any:
        return session.client(service, region_name=client_region or region, config=client_config)

    try:
        # STS answers for every account from us-east-1, so the identity is shown even when no region is set.
        identity, account = credentials.check_credentials(client("sts", region or "us-east-1"), region)
    except AwsError as error:  # e.g. a profile whose settings botocore cannot use
        identity, account = (
            CheckResult(credentials.NAME, Status.FAIL, describe(error), credentials.CREDENTIALS_FIX),
            None,
        )
    results = [identity]
    if identity.ok:
        results += [
            bootstrap.check_bootstrap(client("ssm"), client("cloudformation"), account=account, region=region),
            quota.check_endpoint_quota(
                client("service-quotas"),
                instance_type=target.instance_type,
                min_instances=target.min_instances,
                max_instances=target.max_instances,
                region=region,
            ),
            instance_change.check_instance_type_change(
                client("sagemaker"),
                client("application-autoscaling"),
                endpoint=target.endpoint_name,
                instance_type=target.instance_type,
                autoscaling=target.autoscaling,
            ),
            bedrock_access.check_bedrock_model(client("bedrock"), target.model_id, region=region),
            transaction_search.check_transaction_search(client("xray")),
            lambda_concurrency.check_lambda_concurrency(
                client("lambda"), reserved=target.relay_concurrency, region=region
            ),
        ]
    else:
        skipped = (
            bootstrap.NAME,
            quota.NAME,
            instance_change.NAME,
            bedrock_access.NAME,
            transaction_search.NAME,
            lambda_concurrency.NAME,
        )
        results += [_skipped(name) for name in skipped]
    results.append(ami.check_inference_ami(target.inference_ami_version, target.instance_type))
    results.append(
        docker.check_docker(
            docker.needed_platforms(tts_image_uri=target.tts_image_uri, agent_image_uri=target.agent_image_uri),
            docker=docker_command,
        )
    )
    pricing = client("pricing", PRICING_REGION) if identity.ok else None
    results.append(
        cost.check_cost(pricing, instance_type=target.instance_type, min_instances=target.min_instances, region=region)
    )
    return results


def report(results: Sequence[CheckResult]) -> tuple[list[str], int]:
    """The lines to print (one per check, then a verdict) and the exit status: 0 when every check passed or
    only warned, 1 otherwise."""
    width = max(len(result.name) for result in results)
    lines = [result.line(width) for result in results]
    failed = [result.name for result in results if not result.ok]
    warned = sum(result.status is Status.WARN for result in results)
    if failed:
        lines.append(
            f"preflight failed: {', '.join(failed)}. Fix each as its line says, then run make preflight again."
        )
        return lines, 1
    note = f" ({warned} warning{'s' if warned != 1 else ''})" if warned else ""
    lines.append(f"preflight passed: {len(results)} checks{note}. Ready for make deploy.")
    return lines, 0
