"""Observability: the alerts topic, the dashboard and the paging alarms over every other part."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_bedrockagentcore as agentcore
from constructs import Construct

from relay_infra.config import RelayConfig
from relay_infra.constructs.alerts_topic import AlertsTopic
from relay_infra.constructs.relay_dashboard import RelayDashboard
from relay_infra.stacks.gateway import GatewayStack


class ObservabilityStack(Stack):
    """Dashboard ``KokoroRelay-<environment>``, alarms, and the encrypted alerts topic (also the ops findings')."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: RelayConfig,
        endpoint_name: str,
        runtime: agentcore.IBedrockAgentRuntime,
        gateway: GatewayStack,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.alerts = AlertsTopic(self, "Alerts", email=config.alarm_email).topic
        self.dashboard = RelayDashboard(
            self,
            "Dashboard",
            endpoint_name=endpoint_name,
            runtime=runtime,
            gateway=gateway,
            alerts=self.alerts,
            dashboard_name=config.stack_prefix,
        )
        CfnOutput(self, "AlertsTopicArn", value=self.alerts.topic_arn)
