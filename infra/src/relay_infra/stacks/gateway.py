"""Gateway: the WebSocket API, its route functions and the asynchronously invoked relay, the two tables, and
the Cognito user pool whose tokens ``$connect`` accepts.

Each function gets only its own grants (docs/functions.md lists what each needs):
``execute-api:ManageConnections`` on this API's stage only, ``bedrock-agentcore:InvokeAgentRuntime`` on this
runtime only (the relay; cancel and $default for a late barge-in), ``lambda:InvokeFunction`` on the relay only
(sendMessage).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import CfnOutput, Duration, RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigw_v1
from aws_cdk import aws_bedrockagentcore as agentcore
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as lambda_destinations
from constructs import Construct

from relay_functions import manifest
from relay_infra.config import RelayConfig
from relay_infra.constructs.python_function import RelayFunction
from relay_infra.constructs.relay_tables import RelayTables
from relay_infra.constructs.user_pool import RelayUserPool
from relay_infra.constructs.websocket_gateway import STAGE_NAME, WebSocketGateway
from relay_infra.nag import Acknowledged, acknowledge, logical_id

SERVICE = "relay-gateway"


@dataclass(frozen=True, slots=True)
class GatewayFunctions:
    """The gateway's functions by role (the dashboard and alarms read them too): one field per entry of
    ``relay_functions.manifest.FUNCTIONS``, built from it."""

    authorizer: RelayFunction
    connect: RelayFunction
    disconnect: RelayFunction
    default: RelayFunction
    send_message: RelayFunction
    cancel: RelayFunction
    resume: RelayFunction
    new_conversation: RelayFunction
    relay: RelayFunction
    relay_failed: RelayFunction

    def all(self) -> list[RelayFunction]:
        return [
            self.authorizer,
            self.connect,
            self.disconnect,
            self.default,
            self.send_message,
            self.cancel,
            self.resume,
            self.new_conversation,
            self.relay,
            self.relay_failed,
        ]


class GatewayStack(Stack):
    """The WebSocket front door (routes, authorizer, stage throttling), tables, functions and user pool."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: RelayConfig,
        code: lambda_.Code,
        runtime: agentcore.IBedrockAgentRuntime,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        retention = config.log_retention
        self.tables = RelayTables(self, "Tables")
        self.users = RelayUserPool(self, "Users")
        values = {
            "CONNECTIONS_TABLE": self.tables.connections.table_name,
            "TURNS_TABLE": self.tables.turns.table_name,
            "AGENT_RUNTIME_ARN": runtime.agent_runtime_arn,
            "AGENT_RUNTIME_QUALIFIER": "DEFAULT",
            "JWT_ISSUER": self.users.issuer,
            "JWT_AUDIENCE": ",".join(self.users.audiences),
            "TURNS_PER_MINUTE": str(config.turns_per_minute),
            "RESUME_WINDOW_S": str(config.resume_window_s),
            "CONNECTION_TTL_S": str(config.connection_ttl_s),
        }
        """Every setting this stack gives; each function gets exactly those its manifest entry says it reads."""

        def function(entry: manifest.GatewayFunction, **options: Any) -> RelayFunction:
            return RelayFunction(
                self,
                "".join(part.title() for part in entry.name.split("_")),
                handler=entry.handler,
                code=code,
                service=SERVICE,
                description=f"Kokoro Relay gateway, {entry.route or entry.name} ({entry.handler})",
                environment={k: v for k, v in values.items() if k in entry.settings},
                log_retention=retention,
                **options,
            )

        entries = manifest.by_name()
        relay = function(
            entries[manifest.RELAY],
            timeout=Duration.seconds(config.relay_timeout_s),
            memory_mb=512,
            reserved_concurrency=config.relay_concurrency,
        )
        # A turn the relay cannot take in time (throttled past the event's age) or that it fails is handed to
        # relay_failed, which ends it for the client (it lingers a resume window for a detached one).
        relay_failed = function(entries[manifest.RELAY_FAILED], timeout=Duration.seconds(config.resume_window_s + 60))
        relay.function.configure_async_invoke(
            retry_attempts=0,
            max_event_age=Duration.minutes(1),
            on_failure=lambda_destinations.LambdaDestination(relay_failed.function),
        )
        values["RELAY_FUNCTION_NAME"] = relay.function.function_name
        made = {manifest.RELAY: relay, manifest.RELAY_FAILED: relay_failed}
        built = {name: made.get(name) or function(entry) for name, entry in entries.items()}
        self.functions = GatewayFunctions(**built)
        self.gateway = WebSocketGateway(
            self,
            "WebSocket",
            api_name=f"{config.name_prefix}-websocket",
            authorizer=self.functions.authorizer.function,
            connect=built[manifest.routes()[manifest.CONNECT_ROUTE].name].function,
            disconnect=built[manifest.routes()[manifest.DISCONNECT_ROUTE].name].function,
            default=built[manifest.routes()[manifest.DEFAULT_ROUTE].name].function,
            routes={action: built[name].function for action, name in manifest.action_routes().items()},
            rate_limit=config.stage_rate_limit,
            burst_limit=config.stage_burst_limit,
            log_retention=retention,
        )
        self._grant(runtime)
        if config.api_gateway_cloudwatch_role:
            self._account_logging_role()

        CfnOutput(self, "WebSocketUrl", value=self.gateway.url)
        CfnOutput(self, "UserPoolId", value=self.users.pool.user_pool_id)
        CfnOutput(self, "UserPoolClientId", value=self.users.client.user_pool_client_id)
        CfnOutput(self, "JwtIssuer", value=self.users.issuer)

    def _grant(self, runtime: agentcore.IBedrockAgentRuntime) -> None:
        f, connections, turns = self.functions, self.tables.connections, self.tables.turns
        connections.grant_read_write_data(f.connect.role)
        connections.grant_read_write_data(f.disconnect.role)
        turns.grant_read_write_data(f.disconnect.role)
        # $default serves a valid action that reaches it as its route would, so it needs sendMessage's grants.
        for handler in (f.send_message, f.default):
            connections.grant_read_write_data(handler.role)
            turns.grant_read_write_data(handler.role)
        # sendMessage queues turns; cancel (and $default serving one) queues a late barge-in for the relay to pass
        # to the agent: no route function calls the agent itself (a cold session may outlast a route's timeout)
        for handler in (f.send_message, f.default, f.cancel):
            f.relay.function.grant_invoke(handler.role)
        for handler in (f.cancel, f.resume, f.relay, f.relay_failed):
            connections.grant_read_write_data(handler.role)
            turns.grant_read_write_data(handler.role)
        # newConversation replaces the user's conversation item; it never reads or writes a turn
        connections.grant_read_write_data(f.new_conversation.role)
        answering = (f.default, f.send_message, f.cancel, f.resume, f.new_conversation, f.relay, f.relay_failed)
        for handler in answering:
            self.gateway.grant_manage_connections(handler.role)
        # The relay runs turns, and passes a late barge-in (a cancel with played_ms after the stream ended) to the
        # agent: it is the only function that calls the agent.
        f.relay.role.add_to_policy(
            iam.PolicyStatement(
                actions=["bedrock-agentcore:InvokeAgentRuntime"],
                resources=[runtime.agent_runtime_arn, f"{runtime.agent_runtime_arn}/runtime-endpoint/DEFAULT"],
            )
        )
        for handler in (f.send_message, f.default, f.cancel):
            acknowledge(
                handler.role,
                Acknowledged(
                    "AwsSolutions-IAM5",
                    "lambda:InvokeFunction on the relay function and its versions (CDK's grantInvoke), nothing else.",
                    (f"Resource::<{logical_id(f.relay.function)}.Arn>:*",),
                ),
            )
        acknowledge(
            f.relay.role,
            Acknowledged(
                "AwsSolutions-IAM5",
                "lambda:InvokeFunction on relay_failed and its versions, for Lambda to deliver the relay's failed "
                "asynchronous invocations to it (the on-failure destination CDK grants); nothing else.",
                (f"Resource::<{logical_id(f.relay_failed.function)}.Arn>:*",),
            ),
        )
        for handler in answering:
            acknowledge(
                handler.role,
                Acknowledged(
                    "AwsSolutions-IAM5",
                    "@connections/<connection id>: connection ids exist only at run time; the grant names this "
                    "API and stage only.",
                    (
                        f"Resource::arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:"
                        f"<{logical_id(self.gateway.api)}>/{STAGE_NAME}/POST/@connections/*",
                    ),
                ),
            )

    def _account_logging_role(self) -> None:
        """API Gateway writes stage access logs only once the account names a CloudWatch role (one per region).

        That setting is account-wide: every environment's stage (and any other API in the region) logs through
        whichever role was set last. So the role and the setting are retained when this stack is destroyed — one
        environment's destroy must not take logging away from the others — and the role has no fixed name, so the
        next deploy creates its own instead of failing on the retained one.
        """
        role = iam.Role(
            self,
            "ApiGatewayCloudWatchRole",
            assumed_by=iam.ServicePrincipal("apigateway.amazonaws.com"),
            managed_policies=[
                iam.ManagedPolicy.from_aws_managed_policy_name("service-role/AmazonAPIGatewayPushToCloudWatchLogs")
            ],
        )
        acknowledge(
            role,
            Acknowledged(
                "AwsSolutions-IAM4",
                "AWS's own policy for API Gateway's account-level logging role, which API Gateway documents as "
                "the way to enable execution and access logs.",
                ("Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs",),
            ),
        )
        role.apply_removal_policy(RemovalPolicy.RETAIN)
        account = apigw_v1.CfnAccount(self, "ApiGatewayAccount", cloud_watch_role_arn=role.role_arn)
        account.apply_removal_policy(RemovalPolicy.RETAIN)
        self.gateway.stage.node.add_dependency(account)
