"""The voice agent on Bedrock AgentCore Runtime (the stable ``aws_bedrockagentcore`` L2 constructs).

Its role may stream to the one TTS endpoint (``InvokeEndpointWithBidirectionalStream`` / ``InvokeEndpoint``),
call the one configured Bedrock model and keep conversations under the history bucket's prefix; the L2 adds what
the runtime itself needs (pull its image, write its logs and traces).

Session lifecycle, set deliberately (docs/agent.md "History"): a runtime session ends after
:data:`IDLE_SESSION_TIMEOUT_S` without an invocation and at the latest :data:`MAX_SESSION_LIFETIME_S` after it began.
Neither ends a conversation: its history is in the bucket, and the next turn on the same session id starts a new
microVM, whose agent restores it.
"""

from __future__ import annotations

import re
from typing import Final

from aws_cdk import Duration, Stack
from aws_cdk import aws_bedrockagentcore as agentcore
from aws_cdk import aws_iam as iam
from constructs import Construct

from relay_infra.bedrock_models import is_inference_profile, model_resource_arns
from relay_infra.config import DEFAULT_PROJECT
from relay_infra.constructs.conversation_history import ConversationHistory
from relay_infra.constructs.xray_delivery import SharedTraceDeliveryPolicy
from relay_infra.nag import Acknowledged, acknowledge

RUNTIME_NAME_PATTERN = re.compile(r"^[a-zA-Z][a-zA-Z0-9_]{0,47}$")
IDLE_SESSION_TIMEOUT_S: Final = 15 * 60
"""A runtime session (its microVM) ends after this long without an invocation (AgentCore's 60-28800 s; its default
too, chosen here on purpose): a talker back within a quarter hour finds the agent warm; later, the next turn waits
for a new microVM (a cold start) and its history is read back from the bucket."""
MAX_SESSION_LIFETIME_S: Final = 8 * 3600
"""A runtime session ends this long after it began, busy or not (AgentCore's maximum for microVMs): the fewest cold
starts; its end costs a conversation nothing but one cold start."""


def runtime_name(project: str, environment: str) -> str:
    """AgentCore runtime names allow letters, digits and underscores only: ``kokoro_relay_<environment>`` for the
    default project (the name a first deployment got), ``relay_<project>__<environment>`` for any other, hyphens
    made underscores. The parts hold single hyphens only, so the double underscore keeps every (project,
    environment) pair's name its own."""

    def part(value: str) -> str:
        return re.sub(r"[^A-Za-z0-9_]", "_", value)

    if project == DEFAULT_PROJECT:
        name = "kokoro_relay_" + part(environment)
    else:
        name = f"relay_{part(project)}__{part(environment)}"
    if not RUNTIME_NAME_PATTERN.match(name):
        raise ValueError(
            f"relay:project and relay:environment give an invalid AgentCore runtime name {name!r} (letters, digits "
            "and underscores, at most 48 characters): shorten them"
        )
    return name


def runtime_source_arn(stack: Stack, name: str) -> str:
    """What the runtime role's trust condition admits: the ARNs of runtimes named exactly ``name``.

    A runtime's id is ``<name>-<10 letters or digits>`` (the control plane API's agentRuntimeId pattern) and a
    name holds no hyphen, so ``runtime/<name>-*`` matches this runtime (and its endpoints) and no runtime whose
    name merely starts with ``name`` (``kokoro_relay_dev*`` would admit ``kokoro_relay_dev2``'s)."""
    return f"arn:{stack.partition}:bedrock-agentcore:{stack.region}:{stack.account}:runtime/{name}-*"


class VoiceAgentRuntime(Construct):
    """The Strands voice agent container on AgentCore, wired to one TTS endpoint and one Bedrock model."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        artifact: agentcore.AgentRuntimeArtifact,
        name: str,
        endpoint_name: str,
        endpoint_arn: str,
        model_id: str,
        voice: str,
        history: ConversationHistory,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.runtime = agentcore.Runtime(
            self,
            "Runtime",
            runtime_name=name,
            agent_runtime_artifact=artifact,
            description="Kokoro Relay voice agent: speaks each sentence while it is still writing",
            environment_variables={
                "VOICE_AGENT_TRANSPORT": "sagemaker",
                "VOICE_AGENT_SAGEMAKER_ENDPOINT": endpoint_name,
                "VOICE_AGENT_AWS_REGION": stack.region,
                "VOICE_AGENT_MODEL": "bedrock",
                "VOICE_AGENT_MODEL_ID": model_id,
                **({"VOICE_AGENT_VOICE": voice} if voice else {}),
                "VOICE_AGENT_HISTORY_BUCKET": history.bucket.bucket_name,
                "VOICE_AGENT_HISTORY_PREFIX": history.prefix,
            },
            lifecycle_configuration=agentcore.LifecycleConfiguration(
                idle_runtime_session_timeout=Duration.seconds(IDLE_SESSION_TIMEOUT_S),
                max_lifetime=Duration.seconds(MAX_SESSION_LIFETIME_S),
            ),
            tracing_enabled=True,
        )
        self._trust_only_this_runtime(name)
        destination = self.runtime.node.try_find_child("TracesDeliveryDest")
        if destination is None:
            raise LookupError("the AgentCore L2 no longer delivers traces as TracesDeliveryDest: share its policy")
        SharedTraceDeliveryPolicy(self, "TraceDeliveryPolicy", delivery_destination=destination)
        self.runtime.add_to_role_policy(
            iam.PolicyStatement(
                actions=["sagemaker:InvokeEndpointWithBidirectionalStream", "sagemaker:InvokeEndpoint"],
                resources=[endpoint_arn],
            )
        )
        self.runtime.add_to_role_policy(
            iam.PolicyStatement(
                actions=["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"],
                resources=model_resource_arns(
                    model_id, partition=stack.partition, region=stack.region, account=stack.account
                ),
            )
        )
        for statement in history.statements():
            self.runtime.add_to_role_policy(statement)
        wildcards = [
            history.wildcard_finding(),
            "Resource::arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:*",
            "Resource::arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:/aws/bedrock-agentcore/runtimes/*",
            "Resource::arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:/aws/bedrock-agentcore/"
            "runtimes/*:log-stream:*",
            "Resource::arn:<AWS::Partition>:bedrock-agentcore:<AWS::Region>:<AWS::AccountId>:"
            "workload-identity-directory/default/workload-identity/*",
            "Resource::*",
        ]
        if is_inference_profile(model_id):
            wildcards.append(f"Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/{model_id.split('.', 1)[1]}")
        acknowledge(
            self.runtime,
            Acknowledged(
                "AwsSolutions-IAM5",
                "The AgentCore L2's baseline for its own runtime: log groups/streams under "
                "/aws/bedrock-agentcore/runtimes/ are created per runtime and session (logs:DescribeLogGroups "
                "needs log-group:*); its workload identities are created per agent; X-Ray, "
                "ecr:GetAuthorizationToken and cloudwatch:PutMetricData (namespace-conditioned) have no "
                "resource-level permissions. The conversation history is one folder of objects per conversation "
                "(Strands' S3SessionManager), made at run time under the history bucket's prefix. A cross-region "
                "inference profile routes to its foundation model in "
                "any region it chooses.",
                wildcards,
            ),
        )
        self.runtime_arn = self.runtime.agent_runtime_arn

    def _trust_only_this_runtime(self, name: str) -> None:
        """The L2's trust condition is ``runtime/<name>*``, which another environment's runtime whose name starts
        with this one's also matches: replace it with :func:`runtime_source_arn`."""
        stack = Stack.of(self)
        role = self.runtime.role.node.default_child
        if not isinstance(role, iam.CfnRole):
            raise TypeError("the AgentCore L2 no longer creates the runtime role itself: set its trust condition")
        role.add_property_override(
            "AssumeRolePolicyDocument",
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "bedrock-agentcore.amazonaws.com"},
                        "Action": "sts:AssumeRole",
                        "Condition": {
                            "StringEquals": {"aws:SourceAccount": stack.account},
                            "ArnLike": {"aws:SourceArn": runtime_source_arn(stack, name)},
                        },
                    }
                ],
            },
        )
