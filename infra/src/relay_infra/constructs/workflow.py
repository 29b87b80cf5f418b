"""One operations workflow: a state machine loaded from statemachines/<name>.asl.json with every placeholder
substituted, logging (ALL, without execution data: no tokens or prompts in logs) and X-Ray tracing on, and an
alarm that pages on a failed execution."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from relay_infra.nag import XRAY_WILDCARD, Acknowledged, acknowledge
from relay_infra.state_machine_definitions import used_placeholders


class MissingSubstitutionError(ValueError):
    """A definition uses a placeholder the stack gives no value for."""


class Workflow(Construct):
    """A Step Functions state machine from an ASL file, substituted, logged, traced and alarmed."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        definition: str,
        substitutions: Mapping[str, str],
        alerts: sns.ITopic,
        timeout: Duration,
        log_retention: logs.RetentionDays,
        log_group_name: str,
        description: str,
    ) -> None:
        super().__init__(scope, construct_id)
        missing = sorted(used_placeholders(definition) - substitutions.keys())
        if missing:
            raise MissingSubstitutionError(
                f"{construct_id}: no value for placeholder(s) {', '.join(missing)}; add them in relay_infra's Ops stack"
            )
        used = {name: value for name, value in substitutions.items() if name in used_placeholders(definition)}
        self.log_group = logs.LogGroup(
            self, "Logs", log_group_name=log_group_name, retention=log_retention, removal_policy=RemovalPolicy.DESTROY
        )
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            definition_body=sfn.DefinitionBody.from_string(definition),
            definition_substitutions=used,
            timeout=timeout,
            tracing_enabled=True,
            logs=sfn.LogOptions(destination=self.log_group, level=sfn.LogLevel.ALL, include_execution_data=False),
            comment=description,
        )
        acknowledge(
            self.state_machine,
            XRAY_WILDCARD,
            Acknowledged(
                "AwsSolutions-IAM5",
                "Step Functions' log delivery actions (logs:CreateLogDelivery, ...) have no resource-level "
                "permissions: AWS requires Resource '*'.",
                ("Resource::*",),
            ),
        )
        self.failed_alarm = cloudwatch.Alarm(
            self,
            "FailedAlarm",
            metric=self.state_machine.metric_failed(period=Duration.minutes(5), statistic="Sum"),
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=f"{construct_id} failed: its execution history names the failed step and the cause.",
        )
        self.failed_alarm.add_alarm_action(actions.SnsAction(alerts))
