"""Observability stack: the dashboard's figures and the alarms that page through the encrypted topic."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk.assertions import Match
from tests.infra.iam_statements import rendered

from relay_core.tts.metrics import DIMENSION, FIRST_AUDIO, NAMESPACE, OPEN_SESSIONS, QUEUED_SESSIONS

if TYPE_CHECKING:
    from tests.infra.conftest import SynthesizedApp


def test_dashboard_shows_turns_ttfa_errors_by_code_and_the_endpoint(relay_app: SynthesizedApp) -> None:
    (dashboard,) = relay_app.resources("Observability", "AWS::CloudWatch::Dashboard")
    body = rendered(dashboard["Properties"]["DashboardBody"])
    for figure in ("Turns", "TimeToFirstAudio", "ClientErrors", "Invocations", "AWS/SageMaker"):
        assert figure in body
    # the latency bidirectional sessions really emit (the container's EMF lines), not InvokeEndpoint's ModelLatency
    assert "ModelLatency" not in body
    assert f'\\"{NAMESPACE}\\",\\"{FIRST_AUDIO}\\",\\"{DIMENSION}\\",\\"kokoro-relay-dev-tts\\"' in body


def test_dashboard_shows_the_sessions_the_container_counts_and_pages_when_they_stop(relay_app: SynthesizedApp) -> None:
    """SessionsOpen and SessionsQueued on the dashboard (per instance, as the session policy sees them, and the
    busiest instance), and an alarm that pages when their samples stop: the session policies would be blind."""
    (dashboard,) = relay_app.resources("Observability", "AWS::CloudWatch::Dashboard")
    body = rendered(dashboard["Properties"]["DashboardBody"])
    for name in (OPEN_SESSIONS, QUEUED_SESSIONS):
        assert f'\\"{NAMESPACE}\\",\\"{name}\\",\\"{DIMENSION}\\",\\"kokoro-relay-dev-tts\\"' in body
    assert "sessions_open + sessions_queued" in body
    relay_app.assertions("Observability").has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": NAMESPACE,
            "MetricName": OPEN_SESSIONS,
            "Dimensions": [{"Name": DIMENSION, "Value": "kokoro-relay-dev-tts"}],
            "Statistic": "SampleCount",
            "ComparisonOperator": "LessThanThreshold",
            "Threshold": 1,
            "TreatMissingData": "breaching",
            "AlarmActions": [{"Ref": Match.any_value()}],
        },
    )


def test_paging_alarms_notify_the_alerts_topic(relay_app: SynthesizedApp) -> None:
    alarms = relay_app.resources("Observability", "AWS::CloudWatch::Alarm")
    names = {a["Properties"]["MetricName"] for a in alarms if "MetricName" in a["Properties"]}
    assert {"Invocation5XXErrors", "TimeToFirstAudio", "Errors", "SystemErrors", "ClientErrors"} <= names
    for alarm in alarms:
        assert alarm["Properties"]["AlarmActions"] == [{"Ref": Match.any_value()}] or "Ref" in rendered(
            alarm["Properties"]["AlarmActions"]
        )
    relay_app.assertions("Observability").has_resource_properties(
        "AWS::SNS::Topic", {"KmsMasterKeyId": Match.any_value()}
    )
    relay_app.assertions("Observability").has_resource_properties("AWS::KMS::Key", {"EnableKeyRotation": True})
