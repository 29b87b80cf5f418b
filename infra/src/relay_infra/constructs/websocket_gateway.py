"""The clients' front door: an API Gateway WebSocket API whose ``$connect`` is guarded by a Lambda authorizer.

Routes are selected by ``$request.body.action`` (relay_core's client protocol). Every message route and
``$default`` is two-way (a ``$default`` route response): a handler's ``body`` (a rejection such as ``invalid_json``)
goes back to the client, as the local gateway does (docs/local-stack.md "Route responses").
The token arrives in the query string (browsers cannot set WebSocket headers), so the authorizer's identity source is
``route.request.querystring.token``: a connection without one is refused by API Gateway (401) before the
authorizer runs. The stage throttles messages and writes JSON access logs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import jsii
from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigw_v1
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from relay_infra.nag import Acknowledged, acknowledge

ROUTE_SELECTION = "$request.body.action"
TOKEN_SOURCE = "route.request.querystring.token"  # noqa: S105 - where the token is read, not a token
MESSAGE_ROUTES = ("sendMessage", "cancel", "resume")
"""The client actions (relay_core.client.messages); each has its own route and function."""
STAGE_NAME = "live"
ACCESS_LOG_FORMAT = json.dumps(
    {
        "requestId": "$context.requestId",
        "connectionId": "$context.connectionId",
        "routeKey": "$context.routeKey",
        "eventType": "$context.eventType",
        "status": "$context.status",
        "integrationStatus": "$context.integration.status",
        "error": "$context.error.message",
        "authorizerError": "$context.authorizer.error",
        "user": "$context.authorizer.principalId",
        "requestTime": "$context.requestTimeEpoch",
    }
)
"""Never the message body: prompts and audio stay out of the logs."""


@jsii.implements(apigw.IAccessLogSettings)
class _AccessLogSettings:
    """The stage's access log: JSON lines (:data:`ACCESS_LOG_FORMAT`) into one log group."""

    def __init__(self, destination: apigw.IAccessLogDestination) -> None:
        self._destination = destination

    @property
    def destination(self) -> apigw.IAccessLogDestination:
        return self._destination

    @property
    def format(self) -> apigw_v1.AccessLogFormat:
        return apigw_v1.AccessLogFormat.custom(ACCESS_LOG_FORMAT)


class WebSocketGateway(Construct):
    """The WebSocket API, its routes, the ``$connect`` authorizer and one throttled, logged stage."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        api_name: str,
        authorizer: lambda_.IFunction,
        connect: lambda_.IFunction,
        disconnect: lambda_.IFunction,
        default: lambda_.IFunction,
        routes: Mapping[str, lambda_.IFunction],
        rate_limit: int,
        burst_limit: int,
        log_retention: logs.RetentionDays,
    ) -> None:
        super().__init__(scope, construct_id)
        self.api = apigw.WebSocketApi(
            self,
            "Api",
            api_name=api_name,
            description="Kokoro Relay: prompts in, text and speech out (see docs/client-protocol.md)",
            route_selection_expression=ROUTE_SELECTION,
            connect_route_options=apigw.WebSocketRouteOptions(
                integration=integrations.WebSocketLambdaIntegration("ConnectIntegration", connect),
                authorizer=authorizers.WebSocketLambdaAuthorizer(
                    "TokenAuthorizer", authorizer, identity_source=[TOKEN_SOURCE]
                ),
            ),
            disconnect_route_options=apigw.WebSocketRouteOptions(
                integration=integrations.WebSocketLambdaIntegration("DisconnectIntegration", disconnect)
            ),
            default_route_options=apigw.WebSocketRouteOptions(
                integration=integrations.WebSocketLambdaIntegration("DefaultIntegration", default),
                return_response=True,
            ),
        )
        for action, function in routes.items():
            self.api.add_route(
                action,
                integration=integrations.WebSocketLambdaIntegration(f"{action}Integration", function),
                return_response=True,
            )
        for child in self.api.node.find_all():
            if isinstance(child, apigw.CfnRoute) and child.route_key != "$connect":
                acknowledge(
                    child,
                    Acknowledged(
                        "AwsSolutions-APIG4",
                        "WebSocket APIs authorize once, at $connect (Lambda authorizer on the Cognito JWT); API "
                        "Gateway accepts no authorizer on the other routes of an authorized connection.",
                    ),
                )

        self.access_logs = logs.LogGroup(
            self, "AccessLogs", retention=log_retention, removal_policy=RemovalPolicy.DESTROY
        )
        self.stage = apigw.WebSocketStage(
            self,
            "Stage",
            web_socket_api=self.api,
            stage_name=STAGE_NAME,
            auto_deploy=True,
            throttle=apigw.ThrottleSettings(rate_limit=rate_limit, burst_limit=burst_limit),
            detailed_metrics_enabled=True,
            access_log_settings=_AccessLogSettings(apigw.LogGroupLogDestination(self.access_logs)),
        )
        self.url = self.stage.url
        """``wss://<api id>.execute-api.<region>.amazonaws.com/live``"""
        self.callback_url = self.stage.callback_url

    def connections_arn(self) -> str:
        """``execute-api`` ARN of posting to any connection of this stage (``POST /@connections/{id}``)."""
        return Stack.of(self).format_arn(
            service="execute-api",
            resource=self.api.api_id,
            resource_name=f"{STAGE_NAME}/POST/@connections/*",
        )

    def grant_manage_connections(self, grantee: iam.IGrantable) -> None:
        """``execute-api:ManageConnections`` on this API's stage only."""
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(actions=["execute-api:ManageConnections"], resources=[self.connections_arn()])
        )
