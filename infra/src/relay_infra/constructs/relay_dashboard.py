"""The CloudWatch dashboard and the alarms that page someone, over the gateway's Powertools metrics, the TTS
endpoint, the AgentCore runtime and the WebSocket API.

Metric names come from relay_functions (``relay_functions.gateway.observability``): ``Turns``,
``TimeToFirstAudio`` (ms), ``ClientErrors`` (dimension ``code``), with Powertools' ``service`` dimension.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_bedrockagentcore as agentcore
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_sns as sns
from constructs import Construct

from relay_core.tts.metrics import DIMENSION as TTS_METRICS_DIMENSION
from relay_core.tts.metrics import FIRST_AUDIO as TTS_FIRST_AUDIO
from relay_core.tts.metrics import NAMESPACE as TTS_METRICS_NAMESPACE
from relay_core.tts.metrics import OPEN_SESSIONS as TTS_OPEN_SESSIONS
from relay_core.tts.metrics import QUEUED_SESSIONS as TTS_QUEUED_SESSIONS
from relay_infra.constructs.python_function import METRICS_NAMESPACE
from relay_infra.constructs.session_scaling import DEMAND_EXPRESSION
from relay_infra.constructs.tts_endpoint import VARIANT_NAME
from relay_infra.stacks.gateway import SERVICE as GATEWAY_SERVICE
from relay_infra.stacks.gateway import GatewayStack

PAGING_ERROR_CODES = ("internal_error", "agent_unavailable")
"""Client error codes that mean the system, not the client, failed."""
TTFA_P90_ALARM_MS = 2500
PERIOD = Duration.minutes(1)
SESSION_METRICS_SILENCE = Duration.minutes(5)
"""With no ``SessionsOpen`` sample for this long (each instance writes one every 10 s), the session policies are
blind: the fleet can no longer scale in on them nor out on a queue, and an alarm pages."""


def gateway_metric(name: str, statistic: str, unit: cloudwatch.Unit | None = None) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map={"service": GATEWAY_SERVICE},
        statistic=statistic,
        period=PERIOD,
        unit=unit,
    )


def client_errors_by_code() -> cloudwatch.MathExpression:
    """Every ``ClientErrors`` series, one line per ``code``."""
    return cloudwatch.MathExpression(
        expression=f"SEARCH('{{{METRICS_NAMESPACE},code}} MetricName=\"ClientErrors\"', 'Sum', 60)",
        label="",
        period=PERIOD,
    )


def session_metric(
    endpoint_name: str, name: str, statistic: str, period: Duration = PERIOD, label: str | None = None
) -> cloudwatch.Metric:
    """A metric the Kokoro container writes (EMF on its log group; kokoro_server.session_metrics): per finished
    session request (SageMaker's own ``ModelLatency`` covers ``InvokeEndpoint`` only, never the requests inside a
    bidirectional session), or its sessions open and queued, sampled every 10 s."""
    return cloudwatch.Metric(
        namespace=TTS_METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map={TTS_METRICS_DIMENSION: endpoint_name},
        statistic=statistic,
        period=period,
        label=label,
    )


def session_demand(endpoint_name: str) -> cloudwatch.MathExpression:
    """Sessions open or queued per instance, the figure the session target tracking policy keeps at its target
    (relay_infra.constructs.session_scaling): the Average of every instance's samples."""
    return cloudwatch.MathExpression(
        expression=DEMAND_EXPRESSION,
        using_metrics={
            "sessions_open": session_metric(endpoint_name, TTS_OPEN_SESSIONS, "Average"),
            "sessions_queued": session_metric(endpoint_name, TTS_QUEUED_SESSIONS, "Average"),
        },
        label="open or queued per instance (the session policy's metric)",
        period=PERIOD,
    )


def endpoint_metric(endpoint_name: str, name: str, statistic: str) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace="AWS/SageMaker",
        metric_name=name,
        dimensions_map={"EndpointName": endpoint_name, "VariantName": VARIANT_NAME},
        statistic=statistic,
        period=PERIOD,
    )


class RelayDashboard(Construct):
    """One dashboard (turns, time to first audio, errors by code, endpoint invocations and latency, the TTS
    containers' open and queued sessions) and the alarms on the figures that page someone, each notifying
    ``alerts``."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        endpoint_name: str,
        runtime: agentcore.IBedrockAgentRuntime,
        gateway: GatewayStack,
        alerts: sns.ITopic,
        dashboard_name: str,
    ) -> None:
        super().__init__(scope, construct_id)
        turns = gateway_metric("Turns", "Sum")
        rejected = gateway_metric("TurnsRejected", "Sum")
        ttfa_p50 = gateway_metric("TimeToFirstAudio", "p50")
        ttfa_p90 = gateway_metric("TimeToFirstAudio", "p90")
        invocations = endpoint_metric(endpoint_name, "Invocations", "Sum")
        first_audio_p50 = session_metric(endpoint_name, TTS_FIRST_AUDIO, "p50")
        first_audio_p90 = session_metric(endpoint_name, TTS_FIRST_AUDIO, "p90")
        endpoint_5xx = endpoint_metric(endpoint_name, "Invocation5XXErrors", "Sum")
        concurrency = endpoint_metric(endpoint_name, "ConcurrentRequestsPerModel", "Maximum")
        busiest_open = session_metric(endpoint_name, TTS_OPEN_SESSIONS, "Maximum", label="open, busiest instance")
        busiest_queue = session_metric(
            endpoint_name, TTS_QUEUED_SESSIONS, "Maximum", label="queued, longest queue of an instance"
        )
        session_samples = session_metric(endpoint_name, TTS_OPEN_SESSIONS, "SampleCount", SESSION_METRICS_SILENCE)
        api_id = gateway.gateway.api.api_id
        api_errors = cloudwatch.Metric(
            namespace="AWS/ApiGateway",
            metric_name="IntegrationError",
            dimensions_map={"ApiId": api_id, "Stage": gateway.gateway.stage.stage_name},
            statistic="Sum",
            period=PERIOD,
        )
        relay_errors = gateway.functions.relay.function.metric_errors(period=PERIOD)

        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name=dashboard_name)
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(title="Turns per minute", left=[turns, rejected], width=8),
            cloudwatch.GraphWidget(title="Time to first audio (ms)", left=[ttfa_p50, ttfa_p90], width=8),
            cloudwatch.GraphWidget(title="Client errors by code", left=[client_errors_by_code()], width=8),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(title="TTS endpoint invocations", left=[invocations], right=[concurrency], width=8),
            cloudwatch.GraphWidget(
                title="TTS session first audio (ms)", left=[first_audio_p50, first_audio_p90], width=8
            ),
            cloudwatch.GraphWidget(
                title="Agent runtime errors and gateway integration errors",
                left=[runtime.metric_system_errors(period=PERIOD), runtime.metric_user_errors(period=PERIOD)],
                right=[api_errors, relay_errors],
                width=8,
            ),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="TTS sessions per instance (the container's count)",
                left=[session_demand(endpoint_name), busiest_open],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="TTS sessions waiting for a slot (scale out at once when above 0)",
                left=[busiest_queue],
                width=12,
            ),
        )

        action = actions.SnsAction(alerts)
        paging = {
            "TtsEndpoint5xx": (
                endpoint_5xx,
                5,
                "The TTS endpoint answers 5xx: check its CloudWatch logs and instances.",
            ),
            "TimeToFirstAudioP90": (
                ttfa_p90,
                TTFA_P90_ALARM_MS,
                "Time to first audio p90 is above target: check endpoint scaling and the agent's model latency.",
            ),
            "RelayErrors": (relay_errors, 3, "The relay function fails turns: check its logs (by turn id)."),
            "AgentSystemErrors": (
                runtime.metric_system_errors(period=PERIOD),
                3,
                "AgentCore reports system errors for the voice agent runtime.",
            ),
            "GatewayIntegrationErrors": (api_errors, 5, "API Gateway cannot reach the route functions."),
        }
        for code in PAGING_ERROR_CODES:
            paging[f"ClientErrors_{code}"] = (
                cloudwatch.Metric(
                    namespace=METRICS_NAMESPACE,
                    metric_name="ClientErrors",
                    dimensions_map={"code": code},
                    statistic="Sum",
                    period=PERIOD,
                ),
                5,
                f"Clients receive '{code}' errors: the gateway or agent is failing, not the clients.",
            )
        self.alarms: dict[str, cloudwatch.Alarm] = {}
        for name, (metric, threshold, description) in paging.items():
            alarm = cloudwatch.Alarm(
                self,
                name,
                metric=metric,
                threshold=threshold,
                evaluation_periods=5,
                datapoints_to_alarm=3,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                alarm_description=description,
            )
            alarm.add_alarm_action(action)
            self.alarms[name] = alarm
        silent = cloudwatch.Alarm(
            self,
            "TtsSessionMetricsMissing",
            metric=session_samples,
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.BREACHING,
            alarm_description=(
                "The TTS containers' SessionsOpen/SessionsQueued samples do not reach CloudWatch: the session "
                "scaling policies are blind (no scale-in, no scale-out on a queue). Check KOKORO_METRICS_ENDPOINT "
                "and the EMF lines in the endpoint's log group (docs/capacity.md). Expected once after a cleanup "
                "that deleted the endpoint."
            ),
        )
        silent.add_alarm_action(action)
        self.alarms["TtsSessionMetricsMissing"] = silent
