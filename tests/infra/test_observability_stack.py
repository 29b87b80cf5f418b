"""Observability stack: the dashboard's figures and the alarms that page through the encrypted topic."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk.assertions import Match
from tests.infra.iam_statements import rendered

from relay_core.tts.metrics import DIMENSION, FIRST_AUDIO, NAMESPACE

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
