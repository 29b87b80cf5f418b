"""Autoscaling on what the Kokoro container itself knows: its open and queued sessions.

SageMaker's ``ConcurrentRequestsPerModelHighResolution`` is documented as counting "concurrent requests"; nothing
says whether an open bidirectional session is one for its whole life (docs/capacity.md). The container settles it
for itself: every ``SESSION_GAUGE_INTERVAL_S`` (10 s) each instance writes ``SessionsOpen`` and ``SessionsQueued``
as high-resolution CloudWatch EMF metrics (namespace ``KokoroRelay/Tts``, one dimension ``EndpointName``; names in
:mod:`relay_core.tts.metrics`). Two policies scale on them, beside the one on the built-in metric (Application
Auto Scaling scales out when any policy asks, and in only when every target tracking policy agrees):

- :func:`session_demand_policy`, target tracking on the sessions each instance holds or queues. Every instance
  writes to the same metric (the only dimension is the endpoint), so the ``Average`` statistic over a period is
  the mean of every instance's samples: sessions per instance, with no division by an instance count that
  SageMaker does not publish. The metric math ``open + queued`` is that demand; the target is the configured
  sessions per instance. Application Auto Scaling's ``TargetTrackingMetricStat`` takes no period (EC2 Auto
  Scaling's does), so the alarms it manages read the 10 s samples per minute. No ``FILL``: while the samples do
  not arrive the policy has no data, and a target tracking policy with no data never scales in (the fleet holds;
  the dashboard's ``TtsSessionMetricsMissing`` alarm pages).
- :func:`queue_step_policy`, step scaling, out only, on an alarm of ours that can use the container's own 10 s
  period: ``SessionsQueued`` summed over the fleet (each instance writes one sample per period) at least 1 in 2
  of 3 periods means sessions already wait, which target tracking, a minute behind, has not yet answered. It
  adds one instance per ``sessions_per_instance`` sessions waiting, at most :data:`QUEUE_MAX_STEP` at once.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import Duration
from aws_cdk import aws_applicationautoscaling as autoscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from relay_core.tts.metrics import DIMENSION, NAMESPACE, OPEN_SESSIONS, QUEUED_SESSIONS, SESSION_GAUGE_INTERVAL_S

SCALE_OUT_COOLDOWN: Final = Duration.seconds(60)
"""Target tracking: a GPU instance takes minutes to come in service, so ask for it at once."""
SCALE_IN_COOLDOWN: Final = Duration.minutes(10)
"""Target tracking: sessions are sticky; do not thrash."""
DEMAND_STATISTIC: Final = "Average"
"""Over a period, the mean of all instances' samples: sessions per instance (see the module docstring)."""
DEMAND_EXPRESSION: Final = "sessions_open + sessions_queued"
QUEUE_PERIOD: Final = Duration.seconds(int(SESSION_GAUGE_INTERVAL_S))
"""The queue alarm's period: the container's sampling interval, so each period holds one sample per instance."""
QUEUE_STATISTIC: Final = "Sum"
"""Per period, the sessions waiting on the whole fleet (one sample per instance)."""
QUEUE_EVALUATION_PERIODS: Final = 3
QUEUE_DATAPOINTS_TO_ALARM: Final = 2
"""2 of the last 3 periods: a queue that lasts 20 s, robust to one late sample from a busy instance."""
QUEUE_MAX_STEP: Final = 3
"""The most instances one queue alarm adds at once; target tracking adds the rest once it sees the demand."""
QUEUE_COOLDOWN: Final = Duration.minutes(5)
"""About the time a new GPU instance needs to come in service. During it the instances already ordered count as
capacity, so a queue that persists while they boot orders more only through a larger step."""


def session_demand_policy(
    scope: Construct,
    construct_id: str,
    *,
    target: autoscaling.ScalableTarget,
    endpoint_name: str,
    sessions_per_instance: int,
) -> autoscaling.CfnScalingPolicy:
    """Target tracking on the mean of ``SessionsOpen + SessionsQueued`` per instance, at ``sessions_per_instance``.

    A CloudFormation policy, because CDK's ``scale_to_track_metric`` takes only a single metric, never metric
    math; ``CustomizedMetricSpecification.Metrics`` does (Application Auto Scaling supports metric math in target
    tracking for SageMaker variants)."""
    return autoscaling.CfnScalingPolicy(
        scope,
        construct_id,
        policy_name=f"{endpoint_name}-session-demand",
        policy_type="TargetTrackingScaling",
        scaling_target_id=target.scalable_target_id,
        target_tracking_scaling_policy_configuration=autoscaling.CfnScalingPolicy.TargetTrackingScalingPolicyConfigurationProperty(
            target_value=float(sessions_per_instance),
            customized_metric_specification=autoscaling.CfnScalingPolicy.CustomizedMetricSpecificationProperty(
                metrics=[
                    _gauge_query("sessions_open", OPEN_SESSIONS, endpoint_name),
                    _gauge_query("sessions_queued", QUEUED_SESSIONS, endpoint_name),
                    autoscaling.CfnScalingPolicy.TargetTrackingMetricDataQueryProperty(
                        id="demand",
                        expression=DEMAND_EXPRESSION,
                        label="TTS sessions open or queued per instance",
                        return_data=True,
                    ),
                ]
            ),
            scale_out_cooldown=SCALE_OUT_COOLDOWN.to_seconds(),
            scale_in_cooldown=SCALE_IN_COOLDOWN.to_seconds(),
        ),
    )


def queued_sessions_metric(endpoint_name: str) -> cloudwatch.Metric:
    """``SessionsQueued`` summed over the fleet per container sampling interval (the queue alarm's metric)."""
    return cloudwatch.Metric(
        namespace=NAMESPACE,
        metric_name=QUEUED_SESSIONS,
        dimensions_map={DIMENSION: endpoint_name},
        statistic=QUEUE_STATISTIC,
        period=QUEUE_PERIOD,
    )


def queue_scaling_steps(sessions_per_instance: int) -> list[autoscaling.ScalingInterval]:
    """No change below 1 session waiting; from 1, one more instance per ``sessions_per_instance`` waiting (the
    first from the first session), up to :data:`QUEUE_MAX_STEP`. Only the out side: no scale-in alarm."""
    if sessions_per_instance < 1:
        raise ValueError(f"sessions_per_instance={sessions_per_instance}: set relay:ttsSessionsPerInstance >= 1")
    lowers = sorted({1, *(k * sessions_per_instance for k in range(1, QUEUE_MAX_STEP))})
    steps = [autoscaling.ScalingInterval(upper=1, change=0)]
    steps += [autoscaling.ScalingInterval(lower=lower, change=i + 1) for i, lower in enumerate(lowers)]
    return steps


def queue_step_policy(
    target: autoscaling.ScalableTarget, construct_id: str, *, endpoint_name: str, sessions_per_instance: int
) -> autoscaling.StepScalingPolicy:
    """Scale out at once when sessions wait in the fleet's admission queues (an alarm on 10 s periods)."""
    return target.scale_on_metric(
        construct_id,
        metric=queued_sessions_metric(endpoint_name),
        scaling_steps=queue_scaling_steps(sessions_per_instance),
        adjustment_type=autoscaling.AdjustmentType.CHANGE_IN_CAPACITY,
        metric_aggregation_type=autoscaling.MetricAggregationType.AVERAGE,
        evaluation_periods=QUEUE_EVALUATION_PERIODS,
        datapoints_to_alarm=QUEUE_DATAPOINTS_TO_ALARM,
        cooldown=QUEUE_COOLDOWN,
    )


def _gauge_query(
    query_id: str, metric_name: str, endpoint_name: str
) -> autoscaling.CfnScalingPolicy.TargetTrackingMetricDataQueryProperty:
    return autoscaling.CfnScalingPolicy.TargetTrackingMetricDataQueryProperty(
        id=query_id,
        label=metric_name,
        return_data=False,
        metric_stat=autoscaling.CfnScalingPolicy.TargetTrackingMetricStatProperty(
            metric=autoscaling.CfnScalingPolicy.TargetTrackingMetricProperty(
                namespace=NAMESPACE,
                metric_name=metric_name,
                dimensions=[
                    autoscaling.CfnScalingPolicy.TargetTrackingMetricDimensionProperty(
                        name=DIMENSION, value=endpoint_name
                    )
                ],
            ),
            stat=DEMAND_STATISTIC,
        ),
    )
