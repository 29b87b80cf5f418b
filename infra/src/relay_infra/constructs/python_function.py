"""One Lambda function of relay_functions: arm64, Python 3.12, Powertools on, its own role and log group.

Each function gets a role of its own holding only what the function's stack grants it (plus writing to its own
log group and X-Ray), so no function inherits another's permissions.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from relay_infra.nag import XRAY_WILDCARD, Acknowledged, acknowledge

RUNTIME = lambda_.Runtime.PYTHON_3_12
ARCHITECTURE = lambda_.Architecture.ARM_64
DEFAULT_TIMEOUT = Duration.seconds(10)
METRICS_NAMESPACE = "KokoroRelay"
"""POWERTOOLS_METRICS_NAMESPACE of every function; the dashboard and alarms read their metrics from it."""


class RelayFunction(Construct):
    """A ``relay_functions`` handler deployed as its own function."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        handler: str,
        code: lambda_.Code,
        service: str,
        description: str,
        environment: Mapping[str, str] | None = None,
        timeout: Duration = DEFAULT_TIMEOUT,
        memory_mb: int = 256,
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
        reserved_concurrency: int | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.log_group = logs.LogGroup(self, "Logs", retention=log_retention, removal_policy=RemovalPolicy.DESTROY)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Kokoro Relay {service}: {handler}",
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[self.log_group.log_group_arn],
            )
        )
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler=handler,
            code=code,
            description=description,
            role=self.role,
            timeout=timeout,
            memory_size=memory_mb,
            reserved_concurrent_executions=reserved_concurrency,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=self.log_group,
            logging_format=lambda_.LoggingFormat.JSON,
            environment={
                "POWERTOOLS_SERVICE_NAME": service,
                "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
                "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
                "POWERTOOLS_LOG_LEVEL": "INFO",
                **(environment or {}),
            },
        )
        acknowledge(
            self.role,
            XRAY_WILDCARD,
        )
        acknowledge(
            self.function,
            Acknowledged(
                "AwsSolutions-L1",
                "Python 3.12 is the interpreter the project pins (.python-version), tests on, and bundles "
                "wheels for; it is a supported Lambda runtime.",
            ),
        )

    @property
    def function_name(self) -> str:
        return self.function.function_name
