"""The deployment's settings: one frozen record read from CDK context (cdk.json, or ``-c key=value``).

Every knob a deployer may turn lives here with its default, so stacks never read context themselves and tests
build a config directly. Context keys are ``relay:<field>`` (e.g. ``-c relay:ttsInstanceType=ml.g6.xlarge``);
docs/deploy.md lists them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, Protocol

from aws_cdk import aws_logs as logs

from relay_infra.inference_ami import UnknownInferenceAmiError, inference_ami, supports_instance_type

CONTEXT_PREFIX = "relay:"
NAME_PART = re.compile(r"^[a-z0-9](?:-?[a-z0-9])*$")
"""``relay:project`` and ``relay:environment`` go into S3 bucket, SageMaker and log group names: lowercase letters,
digits and single hyphens (S3 and IAM ARNs are case-sensitive; SageMaker ARNs are lowercase)."""
DEFAULT_PROJECT = "kokoro-relay"
MAX_NAME_PREFIX = 32
"""``<project>-<environment>`` at most this long, so ``<prefix>-tts-<12 hex digits>`` fits SageMaker's 63."""
_RETENTION = {
    1: logs.RetentionDays.ONE_DAY,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    90: logs.RetentionDays.THREE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
}


class ConfigError(ValueError):
    """A context value is missing or invalid; the message names the key and what it accepts."""


class LambdaBundling(StrEnum):
    """How the functions' code asset is built."""

    FULL = "full"
    """The deployable bundle: relay_core + relay_functions + their locked dependencies installed for Lambda's
    arm64 Python 3.12 by pip (needs PyPI, no Docker). What ``make synth`` and ``make deploy`` use."""
    SOURCES = "sources"
    """Only the relay_core and relay_functions sources: fast and offline, for template tests. Not deployable."""


class ContextReader(Protocol):
    """What :meth:`RelayConfig.from_context` reads: a construct node, or :class:`ContextValues`."""

    def try_get_context(self, key: str) -> Any: ...


@dataclass(frozen=True, slots=True)
class ContextValues:
    """Context outside a CDK app: infra/cdk.json's ``context`` overlaid with ``-c key=value`` arguments."""

    values: dict[str, Any]

    def try_get_context(self, key: str) -> Any:
        return self.values.get(key)

    @classmethod
    def from_cdk_json(cls, cdk_json: dict[str, Any], arguments: list[str]) -> ContextValues:
        """``arguments`` like ``["-c", "relay:environment=prod", "--context=relay:voice=jm_kumo"]``."""
        values = dict(cdk_json.get("context", {}))
        pending = False
        for argument in arguments:
            if argument in ("-c", "--context"):
                pending = True
                continue
            text = argument.removeprefix("--context=") if argument.startswith("--context=") else argument
            if pending or argument.startswith("--context="):
                key, _, value = text.partition("=")
                values[key] = value
            pending = False
        return cls(values)


@dataclass(frozen=True, slots=True, kw_only=True)
class RelayConfig:
    """Every deployment setting, with the defaults a first deployment uses."""

    project: str = DEFAULT_PROJECT
    """Value of the ``Project`` tag on every resource; the cleanup inventory finds billable leftovers by it. Part of
    every name this deployment chooses (stacks, exports, the runtime, buckets, SageMaker), so two projects in one
    account never share or overwrite a resource (:attr:`stack_prefix`)."""
    environment: str = "dev"
    """Value of the ``Environment`` tag, and part of every stack name (``KokoroRelay-<environment>-...``)."""

    tts_instance_type: str = "ml.g5.xlarge"
    tts_inference_ami_version: str = "al2023-ami-sagemaker-inference-gpu-4-1"
    """The endpoint's ``InferenceAmiVersion``: its NVIDIA driver must run the CUDA build of the locked torch
    (``relay_infra.inference_ami``; docs/deploy.md "GPU driver and CUDA"). Without one, ``ml.g5`` gets driver 470
    (CUDA 11.4) and the server finds no usable GPU."""
    tts_min_instances: int = 1
    tts_max_instances: int = 4
    tts_sessions_per_instance: int = 24
    """Autoscaling target: concurrent TTS sessions per instance (docs/capacity.md derives it)."""
    tts_autoscaling: bool = True
    """False leaves the variant out of Application Auto Scaling (no scalable target, no policy). SageMaker refuses
    to change the instance type of a variant that is a scaling target, so changing relay:ttsInstanceType takes two
    deploys: this off, then the new type with it on (docs/deploy.md; preflight's ``instance-type`` check)."""
    tts_image_uri: str | None = None
    """A pushed Kokoro GPU image; absent = build containers/kokoro/Dockerfile.gpu as an asset at deploy time."""
    weights_prefix: str = "kokoro-82m/"
    """Key prefix of the KModel weights in the weights-cache bucket (mounted at /opt/ml/model)."""

    agent_image_uri: str | None = None
    """A pushed arm64 agent image; absent = build containers/agent/Dockerfile as an asset at deploy time."""
    model_id: str = "amazon.nova-lite-v1:0"
    """Bedrock model (or cross-region inference profile, e.g. ``us.amazon.nova-lite-v1:0``) the agent writes with."""
    voice: str = ""
    """The agent's voice when a turn names none; empty: the endpoint's default, ``af_heart`` once ``make deploy``
    has put the English packs beside the model (``upload_weights``), ``jf_alpha`` with the embedded ones only."""

    turns_per_minute: int = 10
    resume_window_s: int = 30
    connection_ttl_s: int = 7200
    stage_rate_limit: int = 100
    """Stage throttling: steady messages per second across the API."""
    stage_burst_limit: int = 200
    relay_timeout_s: int = 900
    """The relay Lambda's timeout: a whole turn, up to Lambda's 15-minute maximum."""
    relay_reserved_concurrency: int | None = None
    """Reserved concurrency of the relay function: at most this many turns run at once, and they never take
    the concurrency the route functions need. None: :attr:`relay_concurrency`'s default, the turns the GPU fleet
    speaks at once at its autoscaling target. A turn past it is throttled; Lambda gives up after a minute and
    the relay's on-failure destination ends the turn with ``agent_unavailable`` (docs/capacity.md)."""

    smoke_user_secret_arn: str | None = None
    """A Secrets Manager secret ``{"username", "password"}`` of a Cognito test user: the smoke test's gateway check
    signs in with it (through the smoke-test app client). Absent: the gateway check only verifies that a
    connection without a token is refused."""
    alarm_email: str | None = None
    """Subscribed to the alerts topic when set."""
    audit_schedule: str = "cron(0 6 * * ? *)"
    """EventBridge Scheduler expression of the daily dependency audit (UTC)."""
    deployment_id: str = "initial"
    """Changes on each ``make deploy`` (a timestamp) so the post-deployment smoke test starts every time."""
    lambda_bundling: LambdaBundling = LambdaBundling.FULL
    api_gateway_cloudwatch_role: bool = True
    """Set API Gateway's account-level CloudWatch role (needed for stage access logs). Turn off when the
    account already has one managed elsewhere."""
    log_retention_days: int = 30
    extra_tags: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for key, value in (("relay:project", self.project), ("relay:environment", self.environment)):
            if not NAME_PART.match(value):
                raise ConfigError(
                    f"{key} must be lowercase letters, digits and single hyphens (it is part of bucket and SageMaker "
                    f"names, whose ARNs IAM matches case-sensitively); got {value!r}"
                )
        if len(self.name_prefix) > MAX_NAME_PREFIX:
            raise ConfigError(
                f"relay:project and relay:environment together ({self.name_prefix!r}) must be at most "
                f"{MAX_NAME_PREFIX} characters (SageMaker names are at most 63)"
            )
        if not 1 <= self.tts_min_instances <= self.tts_max_instances:
            raise ConfigError(
                f"need 1 <= relay:ttsMinInstances <= relay:ttsMaxInstances; got {self.tts_min_instances} and "
                f"{self.tts_max_instances}"
            )
        if self.relay_reserved_concurrency is not None and self.relay_reserved_concurrency < 1:
            raise ConfigError(
                "relay:relayReservedConcurrency must be at least 1 (0 would throttle every turn); leave it unset "
                "for ttsMaxInstances x ttsSessionsPerInstance"
            )
        if self.tts_sessions_per_instance < 1:
            raise ConfigError("relay:ttsSessionsPerInstance must be at least 1")
        if not self.tts_instance_type.startswith("ml."):
            raise ConfigError(
                f"relay:ttsInstanceType must be a SageMaker type such as ml.g5.xlarge; got {self.tts_instance_type!r}"
            )
        try:
            ami = inference_ami(self.tts_inference_ami_version)
        except UnknownInferenceAmiError as exc:
            raise ConfigError(f"relay:ttsInferenceAmiVersion: {exc}") from exc
        if ami.accelerator != "gpu":
            raise ConfigError(
                f"relay:ttsInferenceAmiVersion {ami.version} has no NVIDIA driver; the Kokoro image runs on CUDA: "
                "choose a GPU AMI (relay_infra.inference_ami)"
            )
        if not supports_instance_type(ami.version, self.tts_instance_type):
            raise ConfigError(
                f"relay:ttsInstanceType {self.tts_instance_type} is not offered with relay:ttsInferenceAmiVersion "
                f"{ami.version} (families: {', '.join(ami.instance_families)}); pick one of those GPU families"
            )
        if not self.weights_prefix.endswith("/") or self.weights_prefix.startswith("/"):
            raise ConfigError(
                f"relay:weightsPrefix must look like 'name/' (no leading slash, trailing slash); got "
                f"{self.weights_prefix!r}"
            )
        if self.log_retention_days not in _RETENTION:
            raise ConfigError(
                f"relay:logRetentionDays must be one of {sorted(_RETENTION)}; got {self.log_retention_days}"
            )
        if not 60 <= self.relay_timeout_s <= 900:
            raise ConfigError("relay:relayTimeoutS must be between 60 and 900 (Lambda's maximum)")

    @property
    def log_retention(self) -> logs.RetentionDays:
        """:attr:`log_retention_days` as CloudWatch's retention setting."""
        return _RETENTION[self.log_retention_days]

    @property
    def stack_prefix(self) -> str:
        """Every stack's name (and export name) starts with it: ``KokoroRelay-<environment>`` for the default project
        (the names a first deployment got), ``KokoroRelay-<project>--<environment>`` for any other. The parts hold
        single hyphens only, so the double one makes every (project, environment) pair a prefix of its own."""
        if self.project == DEFAULT_PROJECT:
            return f"KokoroRelay-{self.environment}"
        return f"KokoroRelay-{self.project}--{self.environment}"

    @property
    def relay_concurrency(self) -> int:
        """The relay's reserved concurrency: :attr:`relay_reserved_concurrency`, else ``ttsMaxInstances`` x
        ``ttsSessionsPerInstance`` (96 by default: a relay per TTS session the fleet serves at most)."""
        if self.relay_reserved_concurrency is not None:
            return self.relay_reserved_concurrency
        return self.tts_max_instances * self.tts_sessions_per_instance

    @property
    def name_prefix(self) -> str:
        """``<project>-<environment>``: the lowercase prefix of every physical name this deployment chooses."""
        return f"{self.project}-{self.environment}"

    @property
    def tags(self) -> dict[str, str]:
        """The tags every resource carries (the cleanup inventory's filter: ``Project`` = :attr:`project`)."""
        return {"Project": self.project, "Environment": self.environment, "ManagedBy": "cdk", **self.extra_tags}

    @classmethod
    def from_context(cls, node: ContextReader) -> RelayConfig:
        """Read every ``relay:<camelCaseField>`` context value that is set; the rest keep their defaults."""
        values: dict[str, Any] = {}
        for item in fields(cls):
            raw = node.try_get_context(CONTEXT_PREFIX + _camel(item.name))
            if raw is None:
                continue
            values[item.name] = _coerce(item.name, item.type, raw)
        return cls(**values)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _coerce(name: str, annotation: object, raw: Any) -> Any:
    """Turn a context value (JSON from cdk.json, or a string from ``-c``) into the field's type."""
    key = CONTEXT_PREFIX + _camel(name)
    kind = str(annotation)
    try:
        if kind in ("int", "int | None"):
            if kind != "int" and str(raw) == "":
                return None  # an empty value unsets an optional setting
            return int(raw)
        if kind == "bool":
            if isinstance(raw, bool):
                return raw
            if str(raw).lower() in ("true", "1", "yes"):
                return True
            if str(raw).lower() in ("false", "0", "no"):
                return False
            raise ValueError(raw)
        if kind == "LambdaBundling":
            return LambdaBundling(str(raw))
        if kind.startswith("dict"):
            if not isinstance(raw, dict):
                raise ValueError(raw)
            return {str(k): str(v) for k, v in raw.items()}
        text = str(raw)
        if not text and "None" in kind:
            return None  # an empty value unsets an optional setting
        return text
    except ValueError as exc:
        raise ConfigError(f"context {key} has an invalid value {raw!r} (expected {kind})") from exc
