"""Ops: the smoke-test, dependency-audit and cleanup workflows, their task functions, the reports bucket, the
daily audit schedule, and the smoke test started after each deployment.

The workflows' definitions, placeholders and task handlers belong to relay_functions.ops
(``placeholders.PLACEHOLDERS`` / ``FUNCTION_HANDLERS`` / ``STATE_MACHINES``); this stack creates one function per
handler, substitutes every placeholder, and grants each state machine exactly the integrations its definition
calls (:mod:`relay_infra.state_machine_definitions`).
"""

from __future__ import annotations

import json
from typing import Any

from aws_cdk import Annotations, CfnOutput, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as targets
from aws_cdk import aws_sns as sns
from aws_cdk import custom_resources as cr
from constructs import Construct

from relay_core.agent.conversation_ids import gateway_history_prefix
from relay_functions.ops import placeholders
from relay_functions.ops.cleanup_targets import is_cdk_asset_repository
from relay_infra.config import RelayConfig
from relay_infra.constructs.conversation_history import history_bucket_exports, import_history_bucket
from relay_infra.constructs.python_function import RelayFunction
from relay_infra.constructs.secure_bucket import SecureBucket
from relay_infra.constructs.workflow import Workflow
from relay_infra.lambda_code import BUNDLED_LOCK_PATH
from relay_infra.nag import Acknowledged, acknowledge, acknowledge_custom_resource_provider, logical_id
from relay_infra.paths import STATEMACHINES_DIR
from relay_infra.stacks.agent import AgentStack
from relay_infra.stacks.gateway import GatewayStack
from relay_infra.stacks.speech import SpeechStack, import_weights_bucket, weights_bucket_exports
from relay_infra.state_machine_definitions import definition_text, sdk_calls

SERVICE = "relay-ops"
VENDED_LOGS_PREFIX = "/aws/vendedlogs/states/"
"""Step Functions log groups live under this prefix: CloudWatch Logs' resource policy for vended log delivery
covers it with one wildcard, so many state machines never outgrow the policy's size limit."""
WORKFLOW_TIMEOUTS = {
    "smoke_test": Duration.minutes(45),
    "dependency_audit": Duration.minutes(15),
    "cleanup": Duration.hours(2),
    "erase_user": Duration.hours(1),
}


class OpsStack(Stack):
    """Step Functions workflows over the deployed parts, their functions, reports bucket and schedules."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: RelayConfig,
        code: lambda_.Code,
        alerts: sns.ITopic,
        speech: SpeechStack,
        access_logs: s3.IBucket,
        agent: AgentStack,
        gateway: GatewayStack,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        weights_bucket = import_weights_bucket(self, config)
        self._weights_objects_nag = f"Resource::{weights_bucket_exports(config)[1]}/*"
        self.reports = SecureBucket(self, "Reports", access_logs=access_logs, log_prefix="reports/").bucket
        tts = speech.tts
        runtime = agent.runtime
        # Plain lowercase names, not CloudFormation attributes: nothing to export, so a new image (a new model
        # and config) never changes a value this stack imports.
        self._endpoint_arns = [tts.endpoint_arn, tts.endpoint_config_arn, tts.model_arn]
        self._runtime_arns = [runtime.agent_runtime_arn, f"{runtime.agent_runtime_arn}/runtime-endpoint/DEFAULT"]
        self._weights_bucket = weights_bucket
        self._history_bucket = import_history_bucket(self, agent.stack_name)
        self._history_objects_nag = f"Resource::{history_bucket_exports(agent.stack_name)[1]}/*"
        """The agent's conversation-history bucket (the cleanup's ``history_bucket`` part)."""
        self._erasable_history = f"{gateway_history_prefix()}*"
        """What of it the erase-user task may list and delete: the conversations the gateway made, nothing else."""
        self._erasable_history_nag = f"Resource::{history_bucket_exports(agent.stack_name)[1]}/{self._erasable_history}"
        self._tables = (gateway.tables.connections, gateway.tables.turns)
        """The gateway's tables, where the erase-user task deletes a user's items."""
        self._repository = tts.image.repository
        self._images = (tts.image, agent.image)
        """What the dependency audit scans: the Kokoro image and the agent image, each in its own repository."""
        self._smoke_secret_arn = config.smoke_user_secret_arn
        environment = {
            "ENDPOINT_NAME": tts.endpoint_name,
            "AGENT_RUNTIME_ARN": runtime.agent_runtime_arn,
            "AGENT_RUNTIME_ID": runtime.agent_runtime_id,
            "GATEWAY_URL": gateway.gateway.url,
            "USER_POOL_ID": gateway.users.pool.user_pool_id,
            "USER_POOL_CLIENT_ID": gateway.users.smoke_test_client.user_pool_client_id,
            "WEIGHTS_BUCKET": weights_bucket.bucket_name,
            "REPORTS_BUCKET": self.reports.bucket_name,
            "ALERTS_TOPIC_ARN": alerts.topic_arn,
            "PROJECT_TAG": config.project,
            "AUDIT_LOCK_PATH": BUNDLED_LOCK_PATH,
            "AUDIT_ECR_IMAGES": ",".join(
                f"{image.repository.repository_name}{'@' if image.tag.startswith('sha256:') else ':'}{image.tag}"
                for image in self._images
            ),
        }
        if config.smoke_user_secret_arn:
            environment["SMOKE_USER_SECRET_ARN"] = config.smoke_user_secret_arn
        self.functions: dict[str, RelayFunction] = {}
        for placeholder, handler in placeholders.FUNCTION_HANDLERS.items():
            name = _task_name(handler)
            self.functions[name] = RelayFunction(
                self,
                "".join(part.title() for part in name.split("_")),
                handler=handler,
                code=code,
                service=SERVICE,
                description=f"Ops task {name} ({placeholder.removesuffix('FunctionArn')})",
                environment=environment,
                timeout=Duration.minutes(5),
                memory_mb=512,
                log_retention=config.log_retention,
            )
            self._grant_task(name, self.functions[name], runtime_arn=runtime.agent_runtime_arn)

        values: dict[str, str] = {
            placeholder: self.functions[_task_name(handler)].function.function_arn
            for placeholder, handler in placeholders.FUNCTION_HANDLERS.items()
        }
        values.update(placeholders.PRODUCTION_TIMING)
        values.update(
            {
                "EndpointName": tts.endpoint_name,
                "EndpointConfigName": tts.endpoint_config_name,
                "ModelName": tts.model_name,
                "AgentRuntimeId": runtime.agent_runtime_id,
                "WeightsBucketName": weights_bucket.bucket_name,
                "HistoryBucketName": self._history_bucket.bucket_name,
                "ConnectionsTableName": gateway.tables.connections.table_name,
                "TurnsTableName": gateway.tables.turns.table_name,
                "EcrRepositoryName": self._repository.repository_name,
                "AuditReportBucketName": self.reports.bucket_name,
                "AuditTopicArn": alerts.topic_arn,
            }
        )
        self.substitutions = values
        self.workflows: dict[str, Workflow] = {}
        for workflow, file_name in placeholders.STATE_MACHINES.items():
            if not (STATEMACHINES_DIR / file_name).is_file():
                Annotations.of(self).add_warning_v2(
                    "relay:MissingWorkflow", f"statemachines/{file_name} does not exist yet: {workflow} not deployed"
                )
                continue
            text = definition_text(workflow)
            flow = Workflow(
                self,
                "".join(part.title() for part in workflow.split("_")),
                definition=text,
                substitutions=values,
                alerts=alerts,
                timeout=WORKFLOW_TIMEOUTS.get(workflow, Duration.hours(1)),
                log_retention=config.log_retention,
                log_group_name=f"{VENDED_LOGS_PREFIX}{config.name_prefix}-{workflow.replace('_', '-')}",
                description=f"Kokoro Relay {workflow.replace('_', ' ')} (statemachines/{file_name})",
            )
            self._grant_workflow(flow, text, alerts)
            self.workflows[workflow] = flow

        if "dependency_audit" in self.workflows:
            self.audit_schedule = scheduler.Schedule(
                self,
                "DailyAudit",
                schedule=scheduler.ScheduleExpression.expression(config.audit_schedule),
                target=targets.StepFunctionsStartExecution(self.workflows["dependency_audit"].state_machine),
                description="Daily dependency audit of every deployable against OSV advisories",
            )
        if "smoke_test" in self.workflows:
            self._smoke_test_after_deployment(self.workflows["smoke_test"], config.deployment_id)

        for name, flow in self.workflows.items():
            CfnOutput(
                self,
                f"{flow.node.id}StateMachineArn",
                value=flow.state_machine.state_machine_arn,
                description=f"{name} workflow",
            )
        CfnOutput(self, "ReportsBucketName", value=self.reports.bucket_name)

    def _grant_task(self, name: str, function: RelayFunction, *, runtime_arn: str) -> None:
        """What each ops task needs (docs/operations.md), scoped to this deployment's resources."""
        role = function.role
        if name == "smoke_kokoro":
            role.add_to_policy(
                iam.PolicyStatement(
                    actions=[
                        "sagemaker:InvokeEndpointWithBidirectionalStream",
                        "sagemaker:InvokeEndpoint",
                        "sagemaker:InvokeEndpointWithResponseStream",
                    ],
                    resources=[self._endpoint_arns[0]],
                )
            )
        elif name == "smoke_agent":
            role.add_to_policy(
                iam.PolicyStatement(actions=["bedrock-agentcore:InvokeAgentRuntime"], resources=self._runtime_arns)
            )
        elif name == "cleanup_agent_runtime":
            role.add_to_policy(
                iam.PolicyStatement(
                    actions=[
                        "bedrock-agentcore:GetAgentRuntime",
                        "bedrock-agentcore:DeleteAgentRuntime",
                        "bedrock-agentcore:ListAgentRuntimeEndpoints",
                        "bedrock-agentcore:DeleteAgentRuntimeEndpoint",
                    ],
                    resources=self._runtime_arns,
                )
            )
        elif name in ("cleanup_check", "cleanup_inventory"):
            if name == "cleanup_inventory":
                role.add_to_policy(iam.PolicyStatement(actions=["tag:GetResources"], resources=["*"]))
            role.add_to_policy(
                iam.PolicyStatement(
                    actions=[
                        "sagemaker:DescribeEndpoint",
                        "sagemaker:DescribeEndpointConfig",
                        "sagemaker:DescribeModel",
                    ],
                    resources=self._endpoint_arns,
                )
            )
            role.add_to_policy(
                iam.PolicyStatement(actions=["bedrock-agentcore:GetAgentRuntime"], resources=self._runtime_arns)
            )
            role.add_to_policy(
                iam.PolicyStatement(actions=["ecr:DescribeRepositories"], resources=[self._repository.repository_arn])
            )
            role.add_to_policy(
                iam.PolicyStatement(actions=["s3:ListBucket"], resources=[b.bucket_arn for b in self._buckets()])
            )
        elif name == "cleanup_bucket":
            role.add_to_policy(
                iam.PolicyStatement(
                    actions=["s3:ListBucket", "s3:ListBucketVersions", "s3:DeleteBucket"],
                    resources=[b.bucket_arn for b in self._buckets()],
                )
            )
            role.add_to_policy(
                iam.PolicyStatement(
                    actions=["s3:DeleteObject", "s3:DeleteObjectVersion"],
                    resources=[b.arn_for_objects("*") for b in self._buckets()],
                )
            )
        elif name == "erase_user_data":
            role.add_to_policy(
                iam.PolicyStatement(
                    actions=["s3:ListBucket"],
                    resources=[self._history_bucket.bucket_arn],
                    conditions={"StringLike": {"s3:prefix": [self._erasable_history]}},
                )
            )
            role.add_to_policy(
                iam.PolicyStatement(
                    actions=["s3:DeleteObject"],
                    resources=[self._history_bucket.arn_for_objects(self._erasable_history)],
                )
            )
            role.add_to_policy(
                iam.PolicyStatement(
                    actions=["dynamodb:Scan", "dynamodb:DeleteItem"],
                    resources=[table.table_arn for table in self._tables],
                )
            )
        elif name == "smoke_gateway" and self._smoke_secret_arn:
            role.add_to_policy(
                iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=[self._smoke_secret_arn])
            )
        elif name == "cleanup_repository" and not self._repository_is_shared():
            role.add_to_policy(
                iam.PolicyStatement(
                    actions=[
                        "ecr:DeleteRepository",
                        "ecr:BatchDeleteImage",
                        "ecr:DescribeRepositories",
                        "ecr:ListImages",
                    ],
                    resources=[self._repository.repository_arn],
                )
            )
        elif name == "audit_scan":
            role.add_to_policy(
                iam.PolicyStatement(
                    actions=["ecr:DescribeImageScanFindings", "ecr:DescribeImages"],
                    resources=list(dict.fromkeys(image.repository.repository_arn for image in self._images)),
                )
            )
        acknowledge(
            role,
            Acknowledged(
                "AwsSolutions-IAM5",
                "Object keys, runtime endpoint names and (for the inventory) tagged resources are only known at "
                "run time; tag:GetResources has no resource-level permission; the erase-user task deletes the "
                "conversations of a user named at run time, under the prefix of the gateway's conversation ids. "
                "Every other statement names this deployment's resources.",
                ("Resource::*", self._weights_objects_nag, self._history_objects_nag, self._erasable_history_nag),
            ),
        )

    def _buckets(self) -> list[s3.IBucket]:
        """The buckets the cleanup may empty and delete when asked: the weights cache and the conversations."""
        return [self._weights_bucket, self._history_bucket]

    def _repository_is_shared(self) -> bool:
        """Whether the images live in the CDK bootstrap's repository (built from a Dockerfile, not
        ``relay:ttsImageUri``): every CDK app's images are there, so the cleanup may never delete it and its
        function gets no ECR delete permission (docs/operations.md)."""
        return is_cdk_asset_repository(json.dumps(self.resolve(self._repository.repository_name)))

    def _grant_workflow(self, flow: Workflow, text: str, alerts: sns.ITopic) -> None:
        """Invoke only the task functions the definition names; each SDK integration only on its resources."""
        machine = flow.state_machine
        for placeholder, handler in placeholders.FUNCTION_HANDLERS.items():
            if f"${{{placeholder}}}" in text:
                self.functions[_task_name(handler)].function.grant_invoke(machine)
        if "arn:aws:states:::sns:publish" in text:
            alerts.grant_publish(machine)
        by_service: dict[str, list[str]] = {
            "sagemaker": self._endpoint_arns,
            "ecr": [self._repository.repository_arn],
            "bedrockagentcorecontrol": self._runtime_arns,
            "bedrockagentcore": self._runtime_arns,
        }
        for call in sorted(sdk_calls(text), key=lambda c: (c.service, c.action)):
            resources = self._s3_resources(call.action) if call.service == "s3" else by_service.get(call.service)
            if resources is None:
                raise ValueError(
                    f"{flow.node.id} calls aws-sdk:{call.service}:{call.action}; relay_infra.stacks.ops has no "
                    "resource scope for that service yet: add one"
                )
            machine.add_to_role_policy(iam.PolicyStatement(actions=[call.iam_action], resources=resources))
        acknowledge(
            machine,
            Acknowledged(
                "AwsSolutions-IAM5",
                "Reports are written under keys named per execution, and the cleanup empties the weights bucket "
                "of every object version; both are scoped to this deployment's buckets. Invoking a task function "
                "includes its versions (Step Functions passes the ARN it was given). Publishing to the encrypted "
                "alerts topic needs GenerateDataKey* (GenerateDataKey and its WithoutPlaintext form) on its key.",
                (
                    f"Resource::<{logical_id(self.reports)}.Arn>/*",
                    self._weights_objects_nag,
                    "Action::kms:GenerateDataKey*",
                    *[f"Resource::<{logical_id(f.function)}.Arn>:*" for f in self.functions.values()],
                ),
            ),
        )

    def _s3_resources(self, action: str) -> list[str]:
        """What one S3 call of a workflow may touch, per call rather than per service: the audit writes its report
        into the reports bucket and nothing else."""
        scopes = {"putObject": [self.reports.arn_for_objects("*")]}
        if action not in scopes:
            raise ValueError(
                f"a workflow calls aws-sdk:s3:{action}; relay_infra.stacks.ops has no resource scope for it yet: "
                "add one to OpsStack._s3_resources"
            )
        return scopes[action]

    def _smoke_test_after_deployment(self, flow: Workflow, deployment_id: str) -> None:
        """Start the smoke test whenever this stack is deployed with a new ``relay:deploymentId``.

        The Ops stack is deployed last (it depends on every other stack), so the test runs once the whole
        deployment is in place; ``make deploy`` passes a fresh id each time.
        """
        call = cr.AwsSdkCall(
            service="SFN",
            action="startExecution",
            parameters={
                "stateMachineArn": flow.state_machine.state_machine_arn,
                "input": json.dumps({"trigger": "deployment", "deployment_id": deployment_id}),
            },
            physical_resource_id=cr.PhysicalResourceId.of(f"smoke-test-{deployment_id}"),
        )
        trigger = cr.AwsCustomResource(
            self,
            "SmokeTestAfterDeployment",
            on_create=call,
            on_update=call,
            policy=cr.AwsCustomResourcePolicy.from_statements(
                [
                    iam.PolicyStatement(
                        actions=["states:StartExecution"], resources=[flow.state_machine.state_machine_arn]
                    )
                ]
            ),
            install_latest_aws_sdk=False,
        )
        trigger.node.add_dependency(flow.state_machine)
        acknowledge_custom_resource_provider(self, "states:StartExecution on the smoke-test state machine")


def _task_name(handler: str) -> str:
    """``relay_functions.ops.smoke_kokoro.handler`` → ``smoke_kokoro``."""
    return handler.split(".")[-2]
